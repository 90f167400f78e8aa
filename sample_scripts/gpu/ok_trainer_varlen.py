"""Correct: a trainer object on the GPU with variable-length batches (the caching
allocator's reserved memory moves, allocated stays bounded), a running mean kept as a
float and a bounded window of recent losses.

Uses CUDA when available, else the CPU.
"""

import argparse
import collections
import random

import torch
from torch import nn


class Trainer:
    def __init__(self, device: str) -> None:
        self.device = device
        self.model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 8)).to(device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.recent = collections.deque(maxlen=50)
        self.mean_loss = 0.0

    def step(self, rows: int) -> None:
        x = torch.randn(rows, 128, device=self.device)
        target = torch.randint(0, 8, (rows,), device=self.device)
        loss = nn.functional.cross_entropy(self.model(x), target)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        value = loss.item()
        self.recent.append(value)
        self.mean_loss = 0.99 * self.mean_loss + 0.01 * value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1500)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.set_num_threads(1)
    random.seed(0)
    torch.manual_seed(0)
    trainer = Trainer(device)
    for step in range(args.steps):
        trainer.step(random.randint(16, 512))
        if step % 500 == 0:
            print(f"step {step} mean loss {trainer.mean_loss:.4f} on {device}")


if __name__ == "__main__":
    main()
