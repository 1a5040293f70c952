"""Train a small regression model, then evaluate it: the evaluation loop forgets to move the
targets, so on a GPU the run crashes only after the first epoch of training.

    devlint check examples/regression_eval_buggy.py   # finds it without running anything
    devlint run examples/regression_eval_buggy.py     # shows the crash a GPU run would hit
"""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def make_loader(n, seed, shuffle):
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(n, 12, generator=generator)
    targets = features[:, :3].sum(dim=1, keepdim=True) + 0.1 * torch.randn(n, 1, generator=generator)
    return DataLoader(TensorDataset(features, targets), batch_size=32, shuffle=shuffle)


def train_epoch(model, loader, optimizer, device):
    model.train()
    for features, targets in loader:
        features, targets = features.to(device), targets.to(device)
        loss = nn.functional.mse_loss(model(features), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    total = 0.0
    for features, targets in loader:
        predictions = model(features.to(device))
        total += nn.functional.mse_loss(predictions, targets, reduction="sum").item()
    return total / len(loader.dataset)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_loader = make_loader(512, seed=0, shuffle=True)
    valid_loader = make_loader(128, seed=1, shuffle=False)
    for epoch in range(1, 4):
        train_epoch(model, train_loader, optimizer, device)
        print(f"epoch {epoch}: validation MSE {evaluate(model, valid_loader, device):.4f}")


if __name__ == "__main__":
    main()
