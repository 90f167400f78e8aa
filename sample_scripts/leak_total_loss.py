# expect: leak
# holder: total_loss
"""Tabular classifier with a "mean loss so far" readout.

Bug: `total_loss += loss` adds the loss *tensor*, so `total_loss` becomes the
root of one ever-longer autograd graph that keeps every step's activations
alive. Fix: `total_loss += loss.item()`.
"""

import argparse

import torch
import torch.nn.functional as F
from torch import nn


class TabularNet(nn.Module):
    def __init__(self, n_features: int, n_classes: int, width: int = 384) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(n_features, width),
            nn.GELU(),
            nn.Dropout(0.1),
            nn.Linear(width, width),
            nn.GELU(),
        )
        self.head = nn.Linear(width, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def make_batch(gen: torch.Generator, batch: int, n_features: int, n_classes: int):
    x = torch.randn(batch, n_features, generator=gen)
    y = (x[:, :n_classes].argmax(dim=1) + (x[:, -1] > 1.5).long()) % n_classes
    return x, y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=48)
    args = ap.parse_args()

    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(1234)
    torch.manual_seed(1234)
    model = TabularNet(n_features=96, n_classes=7)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    total_loss = 0.0
    for step in range(1, args.steps + 1):
        x, y = make_batch(gen, args.batch, 96, 7)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total_loss += loss  # <- the leak: a tensor with grad_fn, not a float
        if step % 500 == 0:
            print(f"[{step:5d}] mean loss so far {total_loss.item() / step:.4f}")


if __name__ == "__main__":
    main()
