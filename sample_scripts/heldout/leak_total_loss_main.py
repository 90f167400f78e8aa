# expect: leak
# holder: total_loss
# pattern: total_loss += loss (tensor) in main(), never reset: one ever-growing autograd chain
# step_ms: 1.8
"""Multi-label tagging of synthetic "product" feature vectors; BCE, Adam,
epochs over a fixed training set with a shuffled index.

``total_loss += loss`` was meant to give "average loss so far" in the progress
line. ``loss`` is a tensor with a ``grad_fn``, so ``total_loss`` becomes a
tensor too, and each ``+=`` links a new AddBackward node onto the chain that
references the previous total and this step's loss graph. Nothing ever frees
it because ``total_loss`` is never reset (not even per epoch).

Fix: ``total_loss += loss.item()``.
"""

import argparse
import sys
import time

import torch
import torch.nn as nn


def build_dataset(n, d, n_tags, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g)
    proj = torch.randn(d, n_tags, generator=g)
    Y = ((X @ proj) > 1.0).float()
    return X, Y


class Tagger(nn.Module):
    def __init__(self, d, n_tags):
        super().__init__()
        self.fc1 = nn.Linear(d, 256)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(256, 256)
        self.out = nn.Linear(256, n_tags)

    def forward(self, x):
        x = self.drop(torch.relu(self.fc1(x)))
        x = torch.relu(self.fc2(x))
        return self.out(x)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=24)
    ap.add_argument("--n", type=int, default=40_000)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    args = ap.parse_args(argv)

    torch.set_num_threads(1)
    torch.manual_seed(0)
    X, Y = build_dataset(args.n, 64, 20, seed=0)
    model = Tagger(64, 20)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    crit = nn.BCEWithLogitsLoss()

    total_loss = 0
    n_batches = 0
    t0 = time.time()
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(args.n)
        for i in range(0, args.n, args.batch_size):
            idx = perm[i : i + args.batch_size]
            loss = crit(model(X[idx]), Y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total_loss += loss
            n_batches += 1
        avg = total_loss / n_batches
        print(
            f"epoch {epoch + 1}/{args.epochs}  avg loss so far {avg.item():.4f}  "
            f"elapsed {time.time() - t0:.1f}s",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
