import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 2)
model.load_state_dict(torch.load("checkpoint.pt", map_location=device))
model.to(device)
model.eval()
