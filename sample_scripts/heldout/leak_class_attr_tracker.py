# expect: leak
# holder: GradTracker.records|records
# pattern: per-step gradient snapshots in a class attribute shared by every instance
# step_ms: 0.8
"""Train a 4-layer MLP classifier on a spiral dataset and watch gradient norms.

I create a fresh ``GradTracker`` every epoch so its stats "start from zero".
But ``records`` is a *class* attribute (``records = []`` in the class body), so
every tracker appends to the same list, and it also stores a clone of the first
layer's gradient each step for a histogram. Nothing is ever dropped.

Fix: ``self.records = []`` in ``__init__`` (and store norms as floats).
"""

import argparse
import math
import statistics

import torch
import torch.nn as nn


class GradTracker:
    records = []  # per step: {"step": .., "norms": {...}, "first_layer": tensor}

    def __init__(self, model, epoch):
        self.model = model
        self.epoch = epoch

    def log(self, step):
        norms = {}
        first = None
        for name, p in self.model.named_parameters():
            if p.grad is None:
                continue
            norms[name] = p.grad.norm()
            if first is None:
                first = p.grad.clone()
        self.records.append(
            {"step": step, "epoch": self.epoch, "norms": norms, "first_layer": first}
        )

    def summary(self):
        total = [sum(r["norms"].values()).item() for r in self.records[-50:]]
        return statistics.mean(total), max(total)


def spiral(n_per_class, n_classes, noise, gen):
    xs, ys = [], []
    for c in range(n_classes):
        r = torch.linspace(0.05, 1.0, n_per_class)
        t = torch.linspace(c * 4.0, (c + 1) * 4.0, n_per_class) + noise * torch.randn(
            n_per_class, generator=gen
        )
        xs.append(torch.stack([r * torch.sin(t * math.pi / 4), r * torch.cos(t * math.pi / 4)], 1))
        ys.append(torch.full((n_per_class,), c))
    return torch.cat(xs), torch.cat(ys)


def build_model(width):
    return nn.Sequential(
        nn.Linear(2, width),
        nn.Tanh(),
        nn.Linear(width, width),
        nn.Tanh(),
        nn.Linear(width, width),
        nn.Tanh(),
        nn.Linear(width, 5),
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--steps-per-epoch", type=int, default=250)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--width", type=int, default=64)
    args = ap.parse_args()

    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    X, y = spiral(2000, 5, 0.2, gen)
    model = build_model(args.width)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    crit = nn.CrossEntropyLoss()

    step = 0
    for epoch in range(args.epochs):
        tracker = GradTracker(model, epoch)  # new tracker each epoch... right?
        correct = 0
        for _ in range(args.steps_per_epoch):
            idx = torch.randint(0, len(X), (args.batch,), generator=gen)
            out = model(X[idx])
            loss = crit(out, y[idx])
            opt.zero_grad()
            loss.backward()
            tracker.log(step)
            opt.step()
            correct += (out.argmax(1) == y[idx]).sum().item()
            step += 1
        if epoch % 5 == 0 or epoch == args.epochs - 1:
            mean_norm, max_norm = tracker.summary()
            acc = correct / (args.steps_per_epoch * args.batch)
            print(
                f"epoch {epoch:3d} acc {acc:.3f} grad-norm mean {mean_norm:.3f} max {max_norm:.3f}"
            )


if __name__ == "__main__":
    main()
