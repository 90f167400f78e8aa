# expect: leak
# holder: state.history|history
# pattern: @dataclass TrainState keeps a dict of lists keyed by metric name; the 'entropy' and 'loss' entries are graph-attached tensors appended every step
# step_ms: 2
"""Tabular MLP classifier with an argparse CLI and a dataclass training state.

Every step records a few metrics into `state.history[name]`.  The author logs the
tensors themselves (so they can be stacked later) instead of Python numbers.
`loss` keeps its grad_fn chain; `entropy` is worse: it is computed from the
logits but is not part of the loss, so backward() never frees its saved
softmax/log-softmax buffers - each step leaves ~50 KB behind.
Fix: record `.item()` values (or compute the metrics under torch.no_grad()).
"""
import argparse
import time
from collections import defaultdict
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class TrainState:
    step: int = 0
    epoch: int = 0
    best_loss: float = float("inf")
    history: dict = field(default_factory=lambda: defaultdict(list))

    def log(self, **metrics):
        for name, value in metrics.items():
            self.history[name].append(value)


def make_table(n_rows, n_features, n_classes, seed):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(n_features, n_classes, generator=g)
    x = torch.randn(n_rows, n_features, generator=g)
    y = (x @ w + 0.5 * torch.randn(n_rows, n_classes, generator=g)).argmax(1)
    return x, y


def parse_args():
    p = argparse.ArgumentParser(description="tabular MLP baseline")
    p.add_argument("--rows", type=int, default=20000)
    p.add_argument("--features", type=int, default=48)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--epochs", type=int, default=80)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


def main():
    args = parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    x, y = make_table(args.rows, args.features, args.classes, args.seed)

    model = nn.Sequential(
        nn.Linear(args.features, args.hidden), nn.GELU(),
        nn.Linear(args.hidden, args.hidden), nn.GELU(),
        nn.Linear(args.hidden, args.classes),
    )
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)
    state = TrainState()
    t0 = time.time()
    for epoch in range(args.epochs):
        state.epoch = epoch
        perm = torch.randperm(args.rows)
        for i in range(0, args.rows - args.batch_size + 1, args.batch_size):
            idx = perm[i:i + args.batch_size]
            logits = model(x[idx])
            loss = F.cross_entropy(logits, y[idx])
            logp = F.log_softmax(logits, dim=-1)
            entropy = -(logp.exp() * logp).sum(-1).mean()

            opt.zero_grad()
            loss.backward()
            gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            state.step += 1
            state.log(loss=loss, entropy=entropy, grad_norm=gnorm)

        ep_loss = torch.stack(state.history["loss"][-(args.rows // args.batch_size):]).mean().item()
        state.best_loss = min(state.best_loss, ep_loss)
        if epoch % 3 == 0 or epoch == args.epochs - 1:
            ent = state.history["entropy"][-1].item()
            print(f"epoch {epoch:2d} step {state.step:5d} loss {ep_loss:.4f} entropy {ent:.3f}"
                  f" ({time.time() - t0:.1f}s)", flush=True)
    print(f"best epoch loss {state.best_loss:.4f}")


if __name__ == "__main__":
    main()
