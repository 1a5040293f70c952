import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 2).to(device)
loader = DataLoader(TensorDataset(torch.randn(16, 8), torch.randint(0, 2, (16,))), batch_size=4)

for inputs, labels in loader:
    inputs, labels = inputs.to(device), labels.to(device)
    loss = nn.functional.cross_entropy(model(inputs), labels)
