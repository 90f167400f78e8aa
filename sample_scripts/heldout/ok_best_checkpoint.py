# expect: no_leak
# pattern: best-so-far checkpoint: a deepcopy of the state_dict replaces the previous one
# step_ms: 5
"""Tabular classifier (labels from a random "teacher" network) with
early-stopping bookkeeping: every 100 steps we validate, and when the
validation loss improves we keep a snapshot of the weights
(``copy.deepcopy(model.state_dict())``) so that the best model can be
restored at the end.

Memory: the snapshot *replaces* the previous one (``best_state = ...``), so
at most two copies exist for a moment; the old one is freed. Validation
improves often early on and rarely later -- either way, flat.
"""

import argparse
import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_teacher(d, n_classes, seed):
    g = torch.Generator().manual_seed(seed)
    W1, W2 = torch.randn(d, 64, generator=g), torch.randn(64, n_classes, generator=g)
    return lambda X: (torch.tanh(X @ W1 / d**0.5) @ W2).argmax(1)


def make_split(n, d, teacher, gen):
    X = torch.randn(n, d, generator=gen)
    return X, teacher(X)


@torch.no_grad()
def validate(model, X, y):
    model.eval()
    out = model(X)
    model.train()
    return F.cross_entropy(out, y).item(), (out.argmax(1) == y).float().mean().item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2600)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--batch", type=int, default=128)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    teacher = make_teacher(32, 10, seed=0)
    Xtr, ytr = make_split(50_000, 32, teacher, gen)
    Xva, yva = make_split(4_000, 32, teacher, torch.Generator().manual_seed(1))
    model = nn.Sequential(
        nn.Linear(32, 512),
        nn.ReLU(),
        nn.Dropout(0.2),
        nn.Linear(512, 512),
        nn.ReLU(),
        nn.Linear(512, 10),
    )
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)

    best_loss, best_state, best_step = float("inf"), None, -1
    t0 = time.time()
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, len(Xtr), (args.batch,), generator=gen)
        loss = F.cross_entropy(model(Xtr[idx]), ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % args.eval_every == 0:
            vl, va = validate(model, Xva, yva)
            if vl < best_loss:
                best_loss, best_step = vl, step
                best_state = copy.deepcopy(model.state_dict())
            if step % 1000 == 0:
                print(
                    f"step {step:5d} val {vl:.4f} acc {va:.3f} best@{best_step} "
                    f"({time.time() - t0:.1f}s)"
                )
    model.load_state_dict(best_state)
    print("restored best from step", best_step, "val acc", validate(model, Xva, yva)[1])


if __name__ == "__main__":
    main()
