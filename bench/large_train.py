"""A long single-file training script: the 1,000-line file of the language-server latency benchmark.

bench/server_latency.py opens this file in `devlint server`, edits one line and times how long
the diagnostics take to come back. It is written the way long research scripts grow: argparse
with many options, synthetic and folder datasets, tensor augmentations, two model families (a
small ResNet and a small vision transformer), EMA weights, mixed precision with a grad scaler,
gradient accumulation, warmup and cosine schedules, checkpoints with resume, metrics, test-time
augmentation and a prediction export. It carries a few real device bugs (in the evaluation
metrics and the prediction export), so the measured analysis goes all the way to findings.
It is never run; devlint only reads it.
"""

import argparse
import copy
import csv
import json
import math
import os
import random
import time
from collections import OrderedDict, defaultdict
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Subset


# ---------------------------------------------------------------------------- configuration


@dataclass
class TrainConfig:
    model: str = "resnet"
    num_classes: int = 10
    image_size: int = 32
    width: int = 64
    depth: int = 6
    heads: int = 4
    patch: int = 4
    dropout: float = 0.1
    epochs: int = 30
    batch_size: int = 128
    eval_batch_size: int = 256
    accumulate: int = 1
    lr: float = 3e-4
    min_lr: float = 1e-6
    weight_decay: float = 0.05
    warmup_steps: int = 500
    label_smoothing: float = 0.1
    mixup: float = 0.2
    clip_grad: float = 1.0
    ema_decay: float = 0.999
    amp: bool = True
    workers: int = 4
    seed: int = 0
    out_dir: str = "runs/default"
    resume: str = ""
    log_every: int = 50
    eval_every: int = 1
    patience: int = 10
    tta: bool = False
    predict: str = ""
    extra: dict = field(default_factory=dict)


def build_parser():
    parser = argparse.ArgumentParser(description="Train an image classifier on synthetic or folder data.")
    parser.add_argument("--model", choices=["resnet", "vit", "mlp"], default="resnet")
    parser.add_argument("--num-classes", type=int, default=10)
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--patch", type=int, default=4)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--eval-batch-size", type=int, default=256)
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--min-lr", type=float, default=1e-6)
    parser.add_argument("--weight-decay", type=float, default=0.05)
    parser.add_argument("--warmup-steps", type=int, default=500)
    parser.add_argument("--label-smoothing", type=float, default=0.1)
    parser.add_argument("--mixup", type=float, default=0.2)
    parser.add_argument("--clip-grad", type=float, default=1.0)
    parser.add_argument("--ema-decay", type=float, default=0.999)
    parser.add_argument("--no-amp", dest="amp", action="store_false")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", default="runs/default")
    parser.add_argument("--resume", default="")
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--eval-every", type=int, default=1)
    parser.add_argument("--patience", type=int, default=10)
    parser.add_argument("--tta", action="store_true")
    parser.add_argument("--predict", default="")
    parser.add_argument("--data-dir", default="")
    parser.add_argument("--train-size", type=int, default=20000)
    parser.add_argument("--val-size", type=int, default=2000)
    parser.add_argument("--profile", action="store_true")
    return parser


def config_from_args(args):
    known = {name for name in TrainConfig.__dataclass_fields__}
    values = {key: value for key, value in vars(args).items() if key in known}
    extra = {key: value for key, value in vars(args).items() if key not in known}
    return TrainConfig(**values, extra=extra)


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def pick_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


# ---------------------------------------------------------------------------- data


class SyntheticImages(Dataset):
    """Class-dependent blobs on noise: learnable, but not trivially."""

    def __init__(self, n, num_classes=10, size=32, seed=0, transform=None):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, num_classes, (n,), generator=g)
        centers = torch.rand(num_classes, 2, generator=g) * (size - 8) + 4
        self.images = torch.randn(n, 3, size, size, generator=g) * 0.5
        yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
        for i in range(n):
            cy, cx = centers[self.labels[i]]
            blob = torch.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 18.0)
            self.images[i, self.labels[i] % 3] += blob * 2.0
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        image = self.images[index]
        if self.transform is not None:
            image = self.transform(image)
        return image, self.labels[index]


class FolderImages(Dataset):
    """Pre-extracted tensors saved per class folder: <root>/<class>/<n>.pt."""

    def __init__(self, root, transform=None):
        self.root = root
        self.classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
        self.samples = []
        for label, name in enumerate(self.classes):
            folder = os.path.join(root, name)
            for file in sorted(os.listdir(folder)):
                if file.endswith(".pt"):
                    self.samples.append((os.path.join(folder, file), label))
        self.transform = transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, label = self.samples[index]
        image = torch.load(path, map_location="cpu")
        if self.transform is not None:
            image = self.transform(image)
        return image, label


class RandomCrop:
    def __init__(self, size, padding=4):
        self.size = size
        self.padding = padding

    def __call__(self, image):
        padded = F.pad(image, (self.padding,) * 4, mode="reflect")
        top = random.randint(0, padded.shape[1] - self.size)
        left = random.randint(0, padded.shape[2] - self.size)
        return padded[:, top:top + self.size, left:left + self.size]


class RandomFlip:
    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, image):
        if random.random() < self.p:
            return image.flip(-1)
        return image


class Normalize:
    def __init__(self, mean, std):
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def __call__(self, image):
        return (image - self.mean) / self.std


class Compose:
    def __init__(self, steps):
        self.steps = list(steps)

    def __call__(self, image):
        for step in self.steps:
            image = step(image)
        return image


def build_transforms(cfg, train):
    steps = []
    if train:
        steps += [RandomCrop(cfg.image_size), RandomFlip()]
    steps.append(Normalize([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]))
    return Compose(steps)


def build_datasets(cfg):
    data_dir = cfg.extra.get("data_dir", "")
    if data_dir:
        train_set = FolderImages(os.path.join(data_dir, "train"), transform=build_transforms(cfg, True))
        val_set = FolderImages(os.path.join(data_dir, "val"), transform=build_transforms(cfg, False))
    else:
        train_set = SyntheticImages(cfg.extra.get("train_size", 20000), cfg.num_classes, cfg.image_size, seed=cfg.seed,
                                    transform=build_transforms(cfg, True))
        val_set = SyntheticImages(cfg.extra.get("val_size", 2000), cfg.num_classes, cfg.image_size,
                                  seed=cfg.seed + 1, transform=build_transforms(cfg, False))
    return train_set, val_set


def collate_images(batch):
    images = torch.stack([item[0] for item in batch])
    labels = torch.as_tensor([int(item[1]) for item in batch])
    return images, labels


def build_loaders(cfg, train_set, val_set):
    train_loader = DataLoader(train_set, batch_size=cfg.batch_size, shuffle=True, num_workers=cfg.workers,
                              pin_memory=True, drop_last=True, collate_fn=collate_images,
                              persistent_workers=cfg.workers > 0)
    val_loader = DataLoader(val_set, batch_size=cfg.eval_batch_size, shuffle=False, num_workers=cfg.workers,
                            pin_memory=True, collate_fn=collate_images)
    return train_loader, val_loader


def split_for_calibration(dataset, fraction=0.1, seed=0):
    indices = list(range(len(dataset)))
    random.Random(seed).shuffle(indices)
    cut = int(len(indices) * fraction)
    return Subset(dataset, indices[cut:]), Subset(dataset, indices[:cut])


# ---------------------------------------------------------------------------- models


class ConvBNAct(nn.Module):
    def __init__(self, cin, cout, kernel=3, stride=1, groups=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class SqueezeExcite(nn.Module):
    def __init__(self, channels, reduction=4):
        super().__init__()
        hidden = max(8, channels // reduction)
        self.fc1 = nn.Conv2d(channels, hidden, 1)
        self.fc2 = nn.Conv2d(hidden, channels, 1)

    def forward(self, x):
        scale = F.adaptive_avg_pool2d(x, 1)
        scale = torch.sigmoid(self.fc2(F.silu(self.fc1(scale))))
        return x * scale


class ResidualBlock(nn.Module):
    def __init__(self, cin, cout, stride=1, drop_path=0.0):
        super().__init__()
        self.conv1 = ConvBNAct(cin, cout, 3, stride)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.se = SqueezeExcite(cout)
        self.drop_path = drop_path
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.se(self.bn2(self.conv2(self.conv1(x))))
        if self.training and self.drop_path > 0:
            keep = 1.0 - self.drop_path
            mask = torch.rand(out.shape[0], 1, 1, 1, device=out.device) < keep
            out = out * mask / keep
        return F.silu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, num_classes=10, width=64, depth=6, dropout=0.1):
        super().__init__()
        self.stem = ConvBNAct(3, width, 3, 1)
        blocks = []
        channels = width
        for i in range(depth):
            stride = 2 if i in (depth // 3, 2 * depth // 3) else 1
            out_channels = channels * 2 if stride == 2 else channels
            blocks.append(ResidualBlock(channels, out_channels, stride, drop_path=0.1 * i / max(1, depth - 1)))
            channels = out_channels
        self.blocks = nn.Sequential(*blocks)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(channels, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(self.dropout(x))


class PatchEmbed(nn.Module):
    def __init__(self, image_size, patch, dim):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch, patch)
        self.num_patches = (image_size // patch) ** 2

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, dim, heads, dropout=0.0):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        b, n, d = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = self.dropout(attn.softmax(dim=-1))
        out = (attn @ v).transpose(1, 2).reshape(b, n, d)
        return self.proj(out)


class MLP(nn.Module):
    def __init__(self, dim, hidden, dropout=0.0):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.fc2(self.dropout(F.gelu(self.fc1(x)))))


class TransformerBlock(nn.Module):
    def __init__(self, dim, heads, mlp_ratio=4.0, dropout=0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, dropout)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim, int(dim * mlp_ratio), dropout)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    def __init__(self, num_classes=10, image_size=32, patch=4, dim=128, depth=6, heads=4, dropout=0.1):
        super().__init__()
        self.embed = PatchEmbed(image_size, patch, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.zeros(1, self.embed.num_patches + 1, dim))
        self.blocks = nn.ModuleList([TransformerBlock(dim, heads, dropout=dropout) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)
        nn.init.trunc_normal_(self.pos, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)

    def forward(self, x):
        x = self.embed(x)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x[:, 0]))


class MLPClassifier(nn.Module):
    def __init__(self, num_classes=10, image_size=32, width=512, depth=3, dropout=0.1):
        super().__init__()
        layers = [nn.Flatten(), nn.Linear(3 * image_size * image_size, width), nn.GELU(), nn.Dropout(dropout)]
        for _ in range(depth - 1):
            layers += [nn.Linear(width, width), nn.GELU(), nn.Dropout(dropout)]
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def build_model(cfg):
    if cfg.model == "vit":
        return VisionTransformer(cfg.num_classes, cfg.image_size, cfg.patch, cfg.width * 2, cfg.depth, cfg.heads,
                                 cfg.dropout)
    if cfg.model == "mlp":
        return MLPClassifier(cfg.num_classes, cfg.image_size, cfg.width * 8, max(2, cfg.depth // 2), cfg.dropout)
    return ResNet(cfg.num_classes, cfg.width, cfg.depth, cfg.dropout)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def parameter_groups(model, weight_decay):
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name.endswith(".bias") or "pos" in name or "cls_token" in name:
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


# ---------------------------------------------------------------------------- training helpers


class ModelEma:
    """An exponential moving average of the weights, kept on the same device as the model."""

    def __init__(self, model, decay=0.999):
        self.module = copy.deepcopy(model).eval()
        self.decay = decay
        for param in self.module.parameters():
            param.requires_grad_(False)

    @torch.no_grad()
    def update(self, model):
        ema_state = self.module.state_dict()
        for name, value in model.state_dict().items():
            if value.dtype.is_floating_point:
                ema_state[name].mul_(self.decay).add_(value.detach(), alpha=1.0 - self.decay)
            else:
                ema_state[name].copy_(value)

    def state_dict(self):
        return self.module.state_dict()

    def load_state_dict(self, state):
        self.module.load_state_dict(state)


class WarmupCosine:
    def __init__(self, optimizer, warmup, total, base_lr, min_lr):
        self.optimizer = optimizer
        self.warmup = warmup
        self.total = total
        self.base_lr = base_lr
        self.min_lr = min_lr
        self.step_count = 0

    def lr_at(self, step):
        if step < self.warmup:
            return self.base_lr * (step + 1) / max(1, self.warmup)
        progress = min(1.0, (step - self.warmup) / max(1, self.total - self.warmup))
        return self.min_lr + 0.5 * (self.base_lr - self.min_lr) * (1 + math.cos(math.pi * progress))

    def step(self):
        lr = self.lr_at(self.step_count)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.step_count += 1
        return lr

    def state_dict(self):
        return {"step_count": self.step_count}

    def load_state_dict(self, state):
        self.step_count = state["step_count"]


class AverageMeter:
    def __init__(self):
        self.reset()

    def reset(self):
        self.total = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.total += float(value) * n
        self.count += n

    @property
    def average(self):
        return self.total / max(1, self.count)


class EarlyStopping:
    def __init__(self, patience):
        self.patience = patience
        self.best = -math.inf
        self.bad_epochs = 0

    def step(self, metric):
        if metric > self.best:
            self.best = metric
            self.bad_epochs = 0
            return False
        self.bad_epochs += 1
        return self.bad_epochs > self.patience


class CsvLogger:
    def __init__(self, path, fields):
        self.path = path
        self.fields = list(fields)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        if not os.path.exists(path):
            with open(path, "w", newline="") as handle:
                csv.DictWriter(handle, fieldnames=self.fields).writeheader()

    def log(self, row):
        with open(self.path, "a", newline="") as handle:
            csv.DictWriter(handle, fieldnames=self.fields).writerow({k: row.get(k, "") for k in self.fields})


def mixup_batch(images, labels, alpha, num_classes):
    """Mix pairs of examples; returns mixed images and soft targets on the images' device."""
    targets = F.one_hot(labels, num_classes).float()
    if alpha <= 0:
        return images, targets
    lam = float(np.random.beta(alpha, alpha))
    perm = torch.randperm(images.shape[0], device=images.device)
    mixed = lam * images + (1 - lam) * images[perm]
    targets = lam * targets + (1 - lam) * targets[perm]
    return mixed, targets


def soft_cross_entropy(logits, targets, smoothing=0.0):
    if smoothing > 0:
        classes = targets.shape[-1]
        targets = targets * (1 - smoothing) + smoothing / classes
    return torch.sum(-targets * F.log_softmax(logits, dim=-1), dim=-1).mean()


def grad_norm(model):
    total = 0.0
    for param in model.parameters():
        if param.grad is not None:
            total += param.grad.detach().float().norm().item() ** 2
    return math.sqrt(total)


# ---------------------------------------------------------------------------- train and evaluate


def train_one_epoch(model, ema, loader, optimizer, scheduler, scaler, device, cfg, epoch, logger=None):
    model.train()
    loss_meter, acc_meter = AverageMeter(), AverageMeter()
    optimizer.zero_grad(set_to_none=True)
    start = time.perf_counter()
    for step, (images, labels) in enumerate(loader):
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        mixed, targets = mixup_batch(images, labels, cfg.mixup, cfg.num_classes)
        with torch.autocast(device_type=device.type, enabled=cfg.amp and device.type == "cuda"):
            logits = model(mixed)
            loss = soft_cross_entropy(logits, targets, cfg.label_smoothing) / cfg.accumulate
        scaler.scale(loss).backward()
        if (step + 1) % cfg.accumulate == 0:
            if cfg.clip_grad > 0:
                scaler.unscale_(optimizer)
                nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_grad)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
            if ema is not None:
                ema.update(model)
        with torch.no_grad():
            accuracy = (logits.argmax(1) == labels).float().mean().item()
        loss_meter.update(loss.item() * cfg.accumulate, images.shape[0])
        acc_meter.update(accuracy, images.shape[0])
        if step % cfg.log_every == 0:
            elapsed = time.perf_counter() - start
            rate = (step + 1) * images.shape[0] / max(elapsed, 1e-6)
            lr = optimizer.param_groups[0]["lr"]
            print(f"epoch {epoch} step {step}/{len(loader)} loss {loss_meter.average:.4f} "
                  f"acc {acc_meter.average:.3f} lr {lr:.2e} {rate:.0f} img/s")
            if logger is not None:
                logger.log({"epoch": epoch, "step": step, "loss": loss_meter.average, "acc": acc_meter.average,
                            "lr": lr})
    return {"loss": loss_meter.average, "acc": acc_meter.average}


def topk_correct(logits, labels, ks=(1, 5)):
    maxk = min(max(ks), logits.shape[1])
    _, pred = logits.topk(maxk, dim=1)
    correct = pred.eq(labels.view(-1, 1).expand_as(pred))
    return [correct[:, :min(k, maxk)].any(dim=1).float().sum().item() for k in ks]


def expected_calibration_error(probabilities, labels, bins=15):
    confidences, predictions = probabilities.max(dim=1)
    accuracies = predictions.eq(labels).float()
    edges = torch.linspace(0, 1, bins + 1)
    ece = torch.zeros(1)
    for low, high in zip(edges[:-1], edges[1:]):
        inside = (confidences > low) & (confidences <= high)
        if inside.any():
            gap = (confidences[inside].mean() - accuracies[inside].mean()).abs()
            ece += gap * inside.float().mean()
    return ece.item()


def tta_logits(model, images):
    logits = model(images)
    logits = logits + model(images.flip(-1))
    return logits / 2


@torch.no_grad()
def evaluate(model, loader, device, cfg, tta=False):
    model.eval()
    loss_meter = AverageMeter()
    top1, top5, total = 0.0, 0.0, 0
    confusion = torch.zeros(cfg.num_classes, cfg.num_classes, dtype=torch.long)
    all_probs, all_labels = [], []
    for images, labels in loader:
        images = images.to(device, non_blocking=True)
        with torch.autocast(device_type=device.type, enabled=cfg.amp and device.type == "cuda"):
            logits = tta_logits(model, images) if tta else model(images)
        loss = F.cross_entropy(logits.float(), labels.to(device))
        loss_meter.update(loss.item(), images.shape[0])
        c1, c5 = topk_correct(logits, labels)
        top1 += c1
        top5 += c5
        total += labels.numel()
        preds = logits.argmax(1).cpu()
        for truth, guess in zip(labels.tolist(), preds.tolist()):
            confusion[truth, guess] += 1
        all_probs.append(logits.softmax(dim=1).float().cpu())
        all_labels.append(labels)
    probabilities = torch.cat(all_probs)
    ece = expected_calibration_error(probabilities, torch.cat(all_labels))
    per_class = (confusion.diag().float() / confusion.sum(1).clamp(min=1).float()).tolist()
    return {
        "loss": loss_meter.average,
        "top1": top1 / max(1, total),
        "top5": top5 / max(1, total),
        "ece": ece,
        "per_class": per_class,
    }


def calibrate_temperature(model, loader, device, steps=50):
    """Fit a softmax temperature on held-out logits (LBFGS on one scalar)."""
    model.eval()
    logits_list, labels_list = [], []
    with torch.no_grad():
        for images, labels in loader:
            logits_list.append(model(images.to(device)).float())
            labels_list.append(labels.to(device))
    logits = torch.cat(logits_list)
    labels = torch.cat(labels_list)
    temperature = torch.ones(1, device=device, requires_grad=True)
    optimizer = torch.optim.LBFGS([temperature], lr=0.01, max_iter=steps)

    def closure():
        optimizer.zero_grad()
        loss = F.cross_entropy(logits / temperature, labels)
        loss.backward()
        return loss

    optimizer.step(closure)
    return temperature.detach().item()


# ---------------------------------------------------------------------------- checkpoints


def checkpoint_state(model, ema, optimizer, scheduler, scaler, epoch, best, cfg):
    return {
        "model": model.state_dict(),
        "ema": ema.state_dict() if ema is not None else None,
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "scaler": scaler.state_dict(),
        "epoch": epoch,
        "best": best,
        "config": asdict(cfg),
    }


def save_checkpoint(state, out_dir, name="last.pt"):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path, model, ema, optimizer, scheduler, scaler, device):
    state = torch.load(path, map_location=device)
    model.load_state_dict(state["model"])
    if ema is not None and state.get("ema") is not None:
        ema.load_state_dict(state["ema"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    scaler.load_state_dict(state["scaler"])
    return state["epoch"] + 1, state.get("best", -math.inf)


def average_checkpoints(paths):
    """Uniform average of several saved model states (stochastic weight averaging by hand)."""
    averaged = OrderedDict()
    for path in paths:
        state = torch.load(path, map_location="cpu")["model"]
        for name, value in state.items():
            if name not in averaged:
                averaged[name] = value.clone().float()
            else:
                averaged[name] += value.float()
    for name in averaged:
        averaged[name] /= len(paths)
    return averaged


def prune_checkpoints(out_dir, keep=3):
    files = sorted(
        (f for f in os.listdir(out_dir) if f.startswith("epoch-") and f.endswith(".pt")),
        key=lambda f: int(f[len("epoch-"):-len(".pt")]),
    )
    for stale in files[:-keep]:
        os.remove(os.path.join(out_dir, stale))


# ---------------------------------------------------------------------------- prediction export


class PredictionWriter:
    def __init__(self, path, class_names):
        self.path = path
        self.class_names = class_names
        self.rows = []

    def add(self, index, probabilities):
        best = int(probabilities.argmax())
        self.rows.append({
            "index": index,
            "label": self.class_names[best] if self.class_names else best,
            "confidence": float(probabilities[best]),
        })

    def close(self):
        with open(self.path, "w") as handle:
            json.dump(self.rows, handle, indent=1)


def predict(cfg, device):
    model = build_model(cfg)
    state = torch.load(cfg.predict)
    model.load_state_dict(state["ema"] or state["model"])
    model.to(device).eval()
    _, val_set = build_datasets(cfg)
    loader = DataLoader(val_set, batch_size=cfg.eval_batch_size, num_workers=cfg.workers, collate_fn=collate_images)
    writer = PredictionWriter(os.path.join(cfg.out_dir, "predictions.json"), getattr(val_set, "classes", None))
    index = 0
    with torch.no_grad():
        for images, _ in loader:
            probabilities = model(images.to(device)).softmax(dim=1)
            histogram = np.histogram(probabilities.max(dim=1).values, bins=10, range=(0, 1))[0]
            for row in probabilities.cpu():
                writer.add(index, row)
                index += 1
    writer.close()
    print(f"wrote {index} predictions; confidence histogram {histogram.tolist()}")


# ---------------------------------------------------------------------------- profiling


def profile_steps(model, loader, device, steps=20):
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    timings = []
    for step, (images, labels) in enumerate(loader):
        if step >= steps:
            break
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        images, labels = images.to(device), labels.to(device)
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        timings.append(time.perf_counter() - t0)
    timings = sorted(timings[2:]) or [0.0]
    return {"median_s": timings[len(timings) // 2], "max_s": timings[-1]}


def memory_report(device):
    if device.type != "cuda":
        return {}
    return {
        "allocated_mib": torch.cuda.memory_allocated(device) / 2 ** 20,
        "reserved_mib": torch.cuda.memory_reserved(device) / 2 ** 20,
        "peak_mib": torch.cuda.max_memory_allocated(device) / 2 ** 20,
    }


# ---------------------------------------------------------------------------- bookkeeping


class RunHistory:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.epochs = []
        self.best_epoch = -1
        self.best_top1 = -math.inf

    def record(self, epoch, train_stats, val_stats, seconds):
        row = {"epoch": epoch, "seconds": seconds}
        row.update({f"train_{k}": v for k, v in train_stats.items()})
        row.update({f"val_{k}": v for k, v in val_stats.items() if k != "per_class"})
        self.epochs.append(row)
        if val_stats.get("top1", -math.inf) > self.best_top1:
            self.best_top1 = val_stats["top1"]
            self.best_epoch = epoch
            return True
        return False

    def save(self):
        os.makedirs(self.out_dir, exist_ok=True)
        with open(os.path.join(self.out_dir, "history.json"), "w") as handle:
            json.dump({"epochs": self.epochs, "best_epoch": self.best_epoch, "best_top1": self.best_top1},
                      handle, indent=1)

    def summary(self):
        if not self.epochs:
            return "no epochs recorded"
        last = self.epochs[-1]
        return (f"{len(self.epochs)} epochs, best top-1 {self.best_top1:.4f} at epoch {self.best_epoch}, "
                f"last loss {last.get('train_loss', float('nan')):.4f}")


def class_balance(dataset, num_classes):
    counts = defaultdict(int)
    for index in range(len(dataset)):
        _, label = dataset[index]
        counts[int(label)] += 1
    return [counts[c] for c in range(num_classes)]


def describe_run(cfg, model, train_set, val_set, device):
    lines = [
        f"model {cfg.model}: {count_parameters(model) / 1e6:.2f}M parameters",
        f"data: {len(train_set)} train / {len(val_set)} val images of {cfg.image_size}px",
        f"device: {device}",
        f"optimisation: AdamW lr {cfg.lr} wd {cfg.weight_decay}, {cfg.epochs} epochs, "
        f"batch {cfg.batch_size} x {cfg.accumulate}",
    ]
    return "\n".join(lines)


def write_config(cfg, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as handle:
        json.dump(asdict(cfg), handle, indent=1, default=str)


# ---------------------------------------------------------------------------- reporting


def format_per_class(per_class, class_names=None):
    names = class_names or [str(i) for i in range(len(per_class))]
    width = max(len(n) for n in names) if names else 1
    return "\n".join(f"  {name:>{width}}: {accuracy:.3f}" for name, accuracy in zip(names, per_class))


def confusion_summary(confusion, top=5):
    off_diagonal = confusion.clone()
    off_diagonal.fill_diagonal_(0)
    flat = off_diagonal.flatten()
    values, indices = flat.topk(min(top, flat.numel()))
    n = confusion.shape[0]
    return [(int(i) // n, int(i) % n, int(v)) for v, i in zip(values, indices) if v > 0]


def write_report(history, val_stats, out_dir, class_names=None):
    lines = ["# Training report", "", history.summary(), ""]
    lines.append("## Per-class accuracy (last evaluation)")
    lines.append(format_per_class(val_stats.get("per_class", []), class_names))
    lines.append("")
    lines.append(f"ECE: {val_stats.get('ece', float('nan')):.4f}")
    with open(os.path.join(out_dir, "report.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")


def plot_history(history, out_dir):
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    epochs = [row["epoch"] for row in history.epochs]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    axes[0].plot(epochs, [row.get("train_loss") for row in history.epochs], label="train")
    axes[0].plot(epochs, [row.get("val_loss") for row in history.epochs], label="val")
    axes[0].set_title("loss")
    axes[0].legend()
    axes[1].plot(epochs, [row.get("val_top1") for row in history.epochs])
    axes[1].set_title("top-1")
    path = os.path.join(out_dir, "history.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------- main


def fit(cfg, device):
    seed_everything(cfg.seed)
    train_set, val_set = build_datasets(cfg)
    train_loader, val_loader = build_loaders(cfg, train_set, val_set)

    model = build_model(cfg).to(device)
    ema = ModelEma(model, cfg.ema_decay) if cfg.ema_decay > 0 else None
    optimizer = torch.optim.AdamW(parameter_groups(model, cfg.weight_decay), lr=cfg.lr)
    steps_per_epoch = len(train_loader) // cfg.accumulate
    scheduler = WarmupCosine(optimizer, cfg.warmup_steps, cfg.epochs * steps_per_epoch, cfg.lr, cfg.min_lr)
    scaler = torch.cuda.amp.GradScaler(enabled=cfg.amp and device.type == "cuda")
    print(describe_run(cfg, model, train_set, val_set, device))
    write_config(cfg, cfg.out_dir)

    start_epoch, best = 0, -math.inf
    if cfg.resume:
        start_epoch, best = load_checkpoint(cfg.resume, model, ema, optimizer, scheduler, scaler, device)
        print(f"resumed from {cfg.resume} at epoch {start_epoch} (best {best:.4f})")

    history = RunHistory(cfg.out_dir)
    stopper = EarlyStopping(cfg.patience)
    logger = CsvLogger(os.path.join(cfg.out_dir, "steps.csv"), ["epoch", "step", "loss", "acc", "lr"])
    val_stats = {}
    for epoch in range(start_epoch, cfg.epochs):
        t0 = time.perf_counter()
        train_stats = train_one_epoch(model, ema, train_loader, optimizer, scheduler, scaler, device, cfg, epoch,
                                      logger)
        if (epoch + 1) % cfg.eval_every != 0:
            continue
        eval_model = ema.module if ema is not None else model
        val_stats = evaluate(eval_model, val_loader, device, cfg, tta=cfg.tta)
        seconds = time.perf_counter() - t0
        improved = history.record(epoch, train_stats, val_stats, seconds)
        print(f"epoch {epoch}: train loss {train_stats['loss']:.4f} val top-1 {val_stats['top1']:.4f} "
              f"top-5 {val_stats['top5']:.4f} ece {val_stats['ece']:.4f} ({seconds:.0f}s)")
        state = checkpoint_state(model, ema, optimizer, scheduler, scaler, epoch, max(best, val_stats["top1"]), cfg)
        save_checkpoint(state, cfg.out_dir)
        save_checkpoint(state, cfg.out_dir, f"epoch-{epoch}.pt")
        prune_checkpoints(cfg.out_dir)
        if improved:
            best = val_stats["top1"]
            save_checkpoint(state, cfg.out_dir, "best.pt")
        history.save()
        if stopper.step(val_stats["top1"]):
            print(f"no improvement for {cfg.patience} evaluations: stopping at epoch {epoch}")
            break
    print(history.summary())
    if val_stats:
        write_report(history, val_stats, cfg.out_dir, getattr(val_set, "classes", None))
        plot_history(history, cfg.out_dir)
    if cfg.extra.get("profile"):
        print(profile_steps(model, train_loader, device))
        print(memory_report(device))
    return history


def main():
    args = build_parser().parse_args()
    cfg = config_from_args(args)
    device = pick_device()
    if cfg.predict:
        predict(cfg, device)
        return
    fit(cfg, device)


if __name__ == "__main__":
    main()
