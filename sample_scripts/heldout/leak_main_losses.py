# expect: leak
# holder: losses
# pattern: retained graphs via a main()-local list (losses.append(loss))
# step_ms: 0.7
"""Fit a small MLP to a synthetic "house prices" table.

I keep every loss so I can print a smoothed curve and dump the whole thing at
the end. RAM climbs the whole run and a long run gets OOM-killed.

Bug: ``losses.append(loss)`` keeps the loss *tensor*, and with it the step's
autograd graph and the activations it saved for backward.
Fix: ``losses.append(loss.item())``.
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
            nn.Linear(n_in, width),
            nn.ReLU(),
            nn.Linear(width, width),
            nn.ReLU(),
        )
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=18000)
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
        pred = model(X[idx])
        loss = F.mse_loss(pred, y[idx])

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        losses.append(loss)

        if step % args.log_every == 0:
            smooth = sum(losses[-200:]) / len(losses[-200:])
            log.info("step %5d  loss %.4f  (%.1fs)", step, smooth.item(), time.time() - t0)

    print(f"done: {len(losses)} steps, last-200 mean {torch.stack(losses[-200:]).mean():.4f}")


if __name__ == "__main__":
    main()
