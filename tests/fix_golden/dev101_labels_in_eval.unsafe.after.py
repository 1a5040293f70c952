import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 3).to(device)
criterion = nn.CrossEntropyLoss()
val_loader = DataLoader(TensorDataset(torch.randn(32, 8), torch.randint(0, 3, (32,))), batch_size=8)


def evaluate(model, loader):
    total, correct = 0.0, 0
    with torch.no_grad():
        for images, labels in loader:
            images = images.to(device)
            logits = model(images)
            labels = labels.to(device)
            total += criterion(logits, labels).item()
            correct += (logits.argmax(1) == labels).sum().item()
    return total, correct


print(evaluate(model, val_loader))
