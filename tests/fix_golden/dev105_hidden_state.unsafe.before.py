import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self, dim=8, hidden=16):
        super().__init__()
        self.hidden = hidden
        self.rnn = nn.GRU(dim, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 2)

    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), self.hidden)
        seq, _ = self.rnn(x, h0)
        return self.out(seq[:, -1])


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Tagger().to(device)
logits = model(torch.randn(4, 5, 8).to(device))
