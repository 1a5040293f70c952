import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 3).to(device)
inputs = torch.randn(8, 4).to(device)
with torch.no_grad():
    scores = model(inputs)
preds = scores.argmax(1).detach().cpu().numpy()
print(np.bincount(preds))
