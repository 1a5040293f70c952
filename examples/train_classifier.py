"""Train a small image classifier on synthetic data.

The corrected version of train_classifier_buggy.py: every tensor that meets the model is moved
to its device, the class weights live on the device, and the DataLoader is left alone (batches
are moved one by one). `devlint check examples/train_classifier.py` reports nothing, and the
script runs on a CPU-only machine as well as on a GPU.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class SyntheticShapes(Dataset):
    """Noisy 1x16x16 images whose class decides which quadrant is bright."""

    def __init__(self, size: int, num_classes: int = 4, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, num_classes, (size,), generator=g)
        self.images = 0.3 * torch.randn(size, 1, 16, 16, generator=g)
        for i, label in enumerate(self.labels.tolist()):
            row, col = divmod(label, 2)
            self.images[i, 0, row * 8:(row + 1) * 8, col * 8:(col + 1) * 8] += 1.0

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.images[idx], self.labels[idx]


class SmallConvNet(nn.Module):
    def __init__(self, num_classes: int = 4):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.dropout = nn.Dropout(0.25)
        self.fc = nn.Linear(32 * 4 * 4, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(self.dropout(torch.flatten(x, 1)))


def train_one_epoch(model, loader, criterion, optimizer, device):
    model.train()
    total_loss = 0.0
    for images, labels in loader:
        images = images.to(device)
        labels = labels.to(device)
        optimizer.zero_grad()
        logits = model(images)
        loss = criterion(logits, labels)
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
    return total_loss / len(loader)


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        preds = model(images).argmax(dim=1)
        correct += (preds == labels).sum().item()
    return correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader = DataLoader(SyntheticShapes(256), batch_size=args.batch_size, shuffle=True)
    val_loader = DataLoader(SyntheticShapes(128, seed=1), batch_size=args.batch_size)

    model = SmallConvNet().to(device)
    class_weights = torch.tensor([1.0, 1.0, 2.0, 2.0], device=device)
    criterion = nn.CrossEntropyLoss(weight=class_weights)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    for epoch in range(1, args.epochs + 1):
        train_loss = train_one_epoch(model, train_loader, criterion, optimizer, device)
        val_acc = evaluate(model, val_loader, device)
        print(f"epoch {epoch}: train loss {train_loss:.4f}, val accuracy {val_acc:.2%}")


if __name__ == "__main__":
    main()
