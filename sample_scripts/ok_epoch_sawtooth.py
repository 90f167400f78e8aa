"""Per-epoch validation-style bookkeeping: every step's predictions and
targets are collected to compute epoch metrics, then the lists are cleared
at the end of the epoch. Memory grows during an epoch and drops back: a
sawtooth whose floor stays put. Must not be flagged.
"""

import argparse

import torch
from torch import nn


class EpochMetrics:
    def __init__(self):
        self.preds, self.targets = [], []

    def add(self, logits, y):
        self.preds.append(logits.detach().clone())
        self.targets.append(y.clone())

    def compute_and_reset(self):
        preds = torch.cat(self.preds)
        targets = torch.cat(self.targets)
        acc = (preds.argmax(1) == targets).float().mean().item()
        self.preds.clear()
        self.targets.clear()
        return acc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2400)
    ap.add_argument("--steps-per-epoch", type=int, default=120)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(9)
    model = nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 100))
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    metrics = EpochMetrics()
    w = torch.randn(40, 100)
    for step in range(1, args.steps + 1):
        x = torch.randn(96, 40)
        y = (x @ w).argmax(1)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        metrics.add(logits, y)
        if step % args.steps_per_epoch == 0:
            acc = metrics.compute_and_reset()
            print(f"epoch {step // args.steps_per_epoch}: train acc {acc:.3f}")


if __name__ == "__main__":
    main()
