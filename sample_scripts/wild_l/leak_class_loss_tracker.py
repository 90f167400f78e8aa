# expect: leak
# holder: class_loss_sum|class_count|loss_sum|per_class|tracker
# pattern: tabular MLP training (Adam) with a PerClassLossTracker that accumulates per-sample losses in defaultdicts keyed by `for cls, l in zip(yb, losses)`; each cls is a fresh 0-d tensor whose hash is its id, so every sample of every step adds new keys (the report hides it by regrouping with int(k))
# step_ms: 30
"""Train a small MLP on synthetic tabular data and report per-class loss every epoch.

The per-class breakdown is used to spot classes the model struggles with
(class imbalance is simulated by skewing the label distribution).
"""
import math
import time
from collections import defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_FEATURES = 48
N_CLASSES = 12
BATCH_SIZE = 256
STEPS_PER_EPOCH = 100
EPOCHS = 5


def make_dataset(n=40_000):
    """Gaussian blobs with a skewed class prior."""
    prior = torch.tensor([1.0 / (k + 1) ** 0.7 for k in range(N_CLASSES)])
    y = torch.multinomial(prior / prior.sum(), n, replacement=True)
    centers = torch.randn(N_CLASSES, N_FEATURES) * 1.5
    x = centers[y] + torch.randn(n, N_FEATURES) * 3.5
    return x, y


class TabularNet(nn.Module):
    def __init__(self, d_in, n_out, hidden=640):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(d_in, hidden), nn.GELU(), nn.LayerNorm(hidden),
            nn.Linear(hidden, hidden), nn.GELU(), nn.LayerNorm(hidden),
            nn.Linear(hidden, hidden), nn.GELU(),
        )
        self.head = nn.Linear(hidden, n_out)

    def forward(self, x):
        return self.head(self.body(x))


class PerClassLossTracker:
    """Running per-class mean loss, printed at the end of each epoch."""

    def __init__(self):
        self.class_loss_sum = defaultdict(float)
        self.class_count = defaultdict(int)

    def update(self, targets, per_sample_loss):
        for cls, l in zip(targets, per_sample_loss.detach()):
            self.class_loss_sum[cls] += float(l)
            self.class_count[cls] += 1

    def summary(self):
        sums = defaultdict(float)
        counts = defaultdict(int)
        for k, v in self.class_loss_sum.items():
            sums[int(k)] += v
            counts[int(k)] += self.class_count[k]
        return {c: sums[c] / counts[c] for c in sorted(sums)}


def main():
    x, y = make_dataset()
    mu, sd = x.mean(0), x.std(0)
    x = (x - mu) / sd

    model = TabularNet(N_FEATURES, N_CLASSES)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    tracker = PerClassLossTracker()

    t0 = time.time()
    step = 0
    for epoch in range(EPOCHS):
        perm = torch.randperm(len(x))
        for i in range(STEPS_PER_EPOCH):
            idx = perm[(i * BATCH_SIZE) % len(x):][:BATCH_SIZE]
            xb, yb = x[idx], y[idx]
            logits = model(xb)
            losses = F.cross_entropy(logits, yb, reduction="none")
            loss = losses.mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tracker.update(yb, losses)
            step += 1
        per_class = tracker.summary()
        worst = max(per_class, key=per_class.get)
        print(f"epoch {epoch} step {step} loss {loss.item():.3f} "
              f"worst class {worst} ({per_class[worst]:.3f}) "
              f"t={time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
