"""A typical single-file training script: the "one example file" of the speed benchmark.

bench/run.py times `devlint check` on this file against a process that only imports
libcst and parses it (the floor for a pre-commit hook on one file). It is written the way
real training scripts are (argparse, a model class, a train and an evaluation loop,
checkpoints) and it carries one real device bug, in `evaluate`, so the measured run
goes all the way to a finding. bench/robustness.py also uses it as a seed for mutations.
"""

import argparse
import math
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class RandomImages(Dataset):
    def __init__(self, n, num_classes=10, size=32, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.images = torch.randn(n, 3, size, size, generator=g)
        self.labels = torch.randint(0, num_classes, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]


class Block(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class SmallResNet(nn.Module):
    def __init__(self, num_classes=10, width=32):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.layers = nn.ModuleList(
            [Block(width, width), Block(width, 2 * width, 2), Block(2 * width, 4 * width, 2)]
        )
        self.head = nn.Linear(4 * width, num_classes)

    def forward(self, x):
        x = self.stem(x)
        for layer in self.layers:
            x = layer(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


def cosine_lr(step, total, base_lr, warmup=100):
    if step < warmup:
        return base_lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * base_lr * (1 + math.cos(math.pi * progress))


def train_one_epoch(model, loader, optimizer, device, epoch, total_steps, base_lr):
    model.train()
    running, seen = 0.0, 0
    for step, (images, labels) in enumerate(loader):
        global_step = epoch * len(loader) + step
        for group in optimizer.param_groups:
            group["lr"] = cosine_lr(global_step, total_steps, base_lr)
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        logits = model(images)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        running += loss.item() * images.size(0)
        seen += images.size(0)
    return running / max(1, seen)


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct, total = 0, 0
    all_preds = []
    for images, labels in loader:
        logits = model(images.to(device))
        preds = logits.argmax(1)
        correct += (preds == labels).sum().item()
        total += labels.numel()
        all_preds.append(preds.cpu().numpy())
    confusion = np.bincount(np.concatenate(all_preds), minlength=10)
    return correct / max(1, total), confusion


def save_checkpoint(model, optimizer, epoch, path):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)


def load_checkpoint(model, optimizer, path, device):
    state = torch.load(path, map_location=device)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["epoch"] + 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--resume", default="")
    parser.add_argument("--out", default="checkpoints/last.pt")
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_set, val_set = RandomImages(5000), RandomImages(1000, seed=1)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              num_workers=args.workers, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=256, num_workers=args.workers)

    model = SmallResNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    start = load_checkpoint(model, optimizer, args.resume, device) if args.resume else 0
    total_steps = args.epochs * len(train_loader)

    for epoch in range(start, args.epochs):
        t0 = time.perf_counter()
        loss = train_one_epoch(model, train_loader, optimizer, device, epoch, total_steps, args.lr)
        acc, confusion = evaluate(model, val_loader, device)
        print(f"epoch {epoch}: loss {loss:.3f} acc {acc:.3f} ({time.perf_counter() - t0:.1f}s) {confusion}")
        save_checkpoint(model, optimizer, epoch, args.out)


if __name__ == "__main__":
    main()
