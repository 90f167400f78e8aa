# expect: leak
# holder: running|on_batch
# pattern: nonlocal tensor accumulator in a closure: ever longer autograd chain (no optimizer)
# step_ms: 0.35
"""Logistic regression by hand (no torch.optim): plain SGD on a synthetic
credit-scoring table, with a tiny callback that tracks the running loss.

``fit_logreg`` defines ``on_batch(loss)``, which does ``running = running +
loss`` on a ``nonlocal`` variable. ``loss`` is a tensor that requires grad, so
``running`` becomes a chain of AddBackward nodes, each one holding on to that
step's graph: one more link (and the step's logits and inputs) per step, for
the whole run.

Fix: ``running += loss.item()`` (or ``loss.detach()``).
"""

import argparse
import math

import torch


def synthetic_credit(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g)
    X[:, 0] = X[:, 0].abs() * 3  # "income"
    w = torch.randn(d, generator=g) / math.sqrt(d)
    logits = X @ w - 0.5
    y = (torch.rand(n, generator=g) < torch.sigmoid(logits)).float()
    return X, y


def fit_logreg(X, y, steps, batch, lr, l2, report_every):
    d = X.shape[1]
    w = torch.zeros(d, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    running = 0.0
    seen = 0

    def on_batch(loss):
        nonlocal running, seen
        running = running + loss
        seen += 1
        return running / seen

    for step in range(steps):
        idx = torch.randint(0, X.shape[0], (batch,))
        xb, yb = X[idx], y[idx]
        logits = xb @ w + b
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, yb)
        loss = loss + l2 * (w * w).sum()
        loss.backward()
        with torch.no_grad():
            for p in (w, b):
                p -= lr * p.grad
                p.grad.zero_()
        avg = on_batch(loss)
        if step % report_every == 0:
            print(f"it {step:6d}  running avg loss {avg.item():.4f}  |w| {w.norm().item():.3f}")
    return w.detach(), b.detach()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=24000)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--l2", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=99)
    ap.add_argument("--report-every", type=int, default=5000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    X, y = synthetic_credit(50_000, 40, args.seed)
    w, b = fit_logreg(X, y, args.steps, args.batch, args.lr, args.l2, args.report_every)
    acc = ((X @ w + b > 0).float() == y).float().mean().item()
    print(f"train accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
