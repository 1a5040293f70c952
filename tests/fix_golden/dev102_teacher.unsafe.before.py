import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
student = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
teacher = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
loader = DataLoader(TensorDataset(torch.randn(32, 16), torch.randint(0, 4, (32,))), batch_size=8)
optimizer = torch.optim.Adam(student.parameters())

for x, y in loader:
    x, y = x.to(device), y.to(device)
    with torch.no_grad():
        soft = teacher(x)
    loss = F.kl_div(F.log_softmax(student(x), 1), F.softmax(soft, 1), reduction="batchmean")
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
