import torch
import torch.nn as nn


class CausalMixer(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.proj = nn.Linear(n, n)
        self.register_buffer("mask", torch.tril(torch.ones(n, n)), persistent=False)

    def forward(self, x):
        return self.proj(x) @ self.mask


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = CausalMixer(8).to(device)
out = model(torch.randn(4, 8, device=device))
