"""Small programs the command-line tests share: a training loop that throws a move away."""

DISCARDED = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=2)
for (x,) in loader:
    x.to(device)
    out = model(x)
"""

# the same, then a device output handed to .numpy() (an unsafe fix)
BUGGY = DISCARDED + '''

def show(batch):
    out = model(batch.to(device))
    return out.numpy()
'''
