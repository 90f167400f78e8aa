# expect: no_leak
# pattern: losses.append(loss.item()) in main(): a float list, +32 bytes/step
# step_ms: 0.7
"""Fit a small MLP to a synthetic "house prices" table and keep the loss
curve as a list of floats for a plot at the end.

This is the fixed version of leak_main_losses.py: ``losses.append(loss.item())``.
The list does grow by one float per step (8 bytes of pointer + a 24-byte float
object), i.e. ~0.5 MB over the run's 15,000 steps -- far below anything that
matters (the README's floor is 1 KiB/step). A profiler that calls this a leak
would flag every training script that keeps a loss curve.
"""

import argparse
import logging
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger("houses")


def make_table(n_rows, n_feat, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n_rows, n_feat, generator=g)
    true_w = torch.randn(n_feat, 1, generator=g)
    y = torch.tanh(X @ true_w) + 0.05 * torch.randn(n_rows, 1, generator=g)
    return X, y


class PriceNet(nn.Module):
    def __init__(self, n_in, width=256):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(n_in, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU()
        )
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=15000)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--log-every", type=int, default=3000)
    args = ap.parse_args()

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)

    X, y = make_table(8192, 20, args.seed)
    model = PriceNet(X.shape[1])
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    losses = []
    t0 = time.time()
    for step in range(args.steps):
        idx = torch.randint(0, X.shape[0], (args.batch_size,))
        loss = F.mse_loss(model(X[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % args.log_every == 0:
            recent = losses[-200:]
            log.info(
                "step %5d  loss %.4f  (%.1fs)", step, sum(recent) / len(recent), time.time() - t0
            )

    print(f"done: {len(losses)} steps, last-200 mean {sum(losses[-200:]) / 200:.4f}")


if __name__ == "__main__":
    main()
