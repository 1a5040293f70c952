"""Fine-tune a BERT-style encoder for three-way sentiment classification.

This script contains two device-placement bugs ON PURPOSE (`devlint check examples/` reports
them): the classification head is replaced after the model was moved, so the new head stays on
the CPU; and the evaluation loop moves every input except the labels. Both crash on a GPU
machine; the second one only after a full training epoch. Needs `transformers` and a download
of the checkpoint to actually run.
"""

import argparse
import random
from functools import partial

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

LABELS = ["negative", "neutral", "positive"]
TRAIN = [
    ("The update fixed every crash I had, great job.", 2),
    ("Delivery was on time, nothing special.", 1),
    ("Terrible support, I want a refund.", 0),
    ("Works as described.", 1),
    ("Absolutely love the new design!", 2),
    ("The app freezes whenever I open the camera.", 0),
]
VALID = [
    ("Best purchase this year.", 2),
    ("It is okay I guess.", 1),
    ("Broke after two days.", 0),
]


def collate(examples, tokenizer, max_length):
    texts = [text for text, _ in examples]
    batch = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    batch["labels"] = torch.tensor([label for _, label in examples])
    return batch


def train_epoch(model, loader, optimizer, scheduler, device):
    model.train()
    total = 0.0
    for batch in loader:
        batch = {k: v.to(device) for k, v in batch.items()}
        outputs = model(**batch)
        outputs.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        total += outputs.loss.item()
    return total / len(loader)


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = 0
    for batch in loader:
        labels = batch.pop("labels")
        inputs = {k: v.to(device) for k, v in batch.items()}
        logits = model(**inputs).logits
        correct += (logits.argmax(dim=-1) == labels).sum().item()
    return correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser(description="Fine-tune a sentiment classifier")
    parser.add_argument("--model", default="bert-base-uncased")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--max-length", type=int, default=64)
    args = parser.parse_args()

    random.seed(0)
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForSequenceClassification.from_pretrained(args.model, num_labels=len(LABELS))
    model.to(device)
    # A deeper head than the checkpoint's single linear layer.
    model.classifier = nn.Sequential(
        nn.Dropout(0.2),
        nn.Linear(model.config.hidden_size, len(LABELS)),
    )

    collate_fn = partial(collate, tokenizer=tokenizer, max_length=args.max_length)
    train_loader = DataLoader(TRAIN, batch_size=args.batch_size, shuffle=True, collate_fn=collate_fn)
    valid_loader = DataLoader(VALID, batch_size=args.batch_size, collate_fn=collate_fn)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    steps = args.epochs * len(train_loader)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=steps // 10, num_training_steps=steps)

    for epoch in range(1, args.epochs + 1):
        loss = train_epoch(model, train_loader, optimizer, scheduler, device)
        acc = evaluate(model, valid_loader, device)
        print(f"epoch {epoch}: loss {loss:.4f}, valid accuracy {acc:.2%}")


if __name__ == "__main__":
    main()
