# expect: no_leak
# holder:
# pattern: timm-style small CNN image classifier on synthetic 32x32 texture images (torch.optim.SGD with Nesterov momentum, cosine LR with warm-up, label smoothing, in-place EMA of the effective weights, ~10 ms per step of 112 images, code in main() + a GradualPruner class) with Zhu & Gupta gradual magnitude pruning: every 20 steps GradualPruner.step() calls torch.nn.utils.prune.l1_unstructured(layer, "weight", amount=...) again on the same conv/linear layers to reach the next point of a cubic sparsity schedule. It looks like the parametrization pile-up (re-registering a mask on already-pruned layers every round, ~45 rounds), but torch.nn.utils.prune merges a repeated call into one PruningContainer forward-pre-hook per parameter and replaces the single `weight_mask` buffer with the combined mask, weight_orig stays the same Parameter object in the optimizer, and the pruner's history dict keyed by step only holds a few floats per round, so memory is flat after the first rounds.
# step_ms: 10
"""Gradual magnitude pruning of a small CNN with torch.nn.utils.prune."""
import math
import time

import numpy as np
import psutil
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune


def rss_mb():
    return psutil.Process().memory_info().rss / 2**20


def make_textures(n, rng, n_classes=8, size=32):
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    freqs = rng.uniform(2, 9, size=(n_classes, 2))
    angles = rng.uniform(0, np.pi, size=n_classes)
    y = rng.integers(n_classes, size=n)
    x = np.empty((n, 3, size, size), dtype=np.float32)
    for i, c in enumerate(y):
        a = angles[c] + rng.normal(scale=0.15)
        u = np.cos(a) * xx + np.sin(a) * yy
        v = -np.sin(a) * xx + np.cos(a) * yy
        base = np.sin(2 * np.pi * freqs[c, 0] * u + rng.uniform(0, 6.3)) * np.cos(2 * np.pi * freqs[c, 1] * v)
        x[i] = base[None] * rng.uniform(0.5, 1.0, size=(3, 1, 1)) + rng.normal(scale=0.3, size=(3, size, size))
    return x, y


class SmallNet(nn.Module):
    def __init__(self, n_classes=8):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.AdaptiveAvgPool2d(2), nn.Flatten(),
        )
        self.fc1 = nn.Linear(256, 256)
        self.fc2 = nn.Linear(256, n_classes)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(self.features(x))))


class GradualPruner:
    """Cubic sparsity schedule (Zhu & Gupta 2017), applied every `every` steps."""

    def __init__(self, layers, final_sparsity, start, end, every):
        self.layers = layers
        self.final, self.start, self.end, self.every = final_sparsity, start, end, every
        self.current = 0.0
        self.history = {}                       # step -> (target sparsity, measured sparsity)

    def target(self, step):
        if step < self.start:
            return 0.0
        t = min(1.0, (step - self.start) / (self.end - self.start))
        return self.final * (1 - (1 - t) ** 3)

    def step(self, step):
        if step % self.every:
            return
        goal = self.target(step)
        if goal <= self.current:
            return
        amount = (goal - self.current) / (1 - self.current)   # fraction of the remaining weights
        for layer in self.layers:
            prune.l1_unstructured(layer, "weight", amount=amount)
        self.current = goal
        zeros = sum(int((l.weight == 0).sum()) for l in self.layers)
        total = sum(l.weight.numel() for l in self.layers)
        self.history[step] = (goal, zeros / total)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x, y = make_textures(4000, rng)
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    xv, yv = x[-500:], y[-500:]
    x, y = x[:-500], y[:-500]
    model = SmallNet()
    layers = [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    steps, warmup, batch = 1200, 60, 112
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    pruner = GradualPruner(layers, final_sparsity=0.85, start=100, end=1000, every=20)
    ema = [(l.weight.detach().clone(), l.bias.detach().clone()) for l in layers]
    gen = torch.Generator().manual_seed(0)
    losses = []
    print(f"start: rss={rss_mb():.1f} MB")
    t0 = time.time()
    for step in range(1, steps + 1):
        idx = torch.randint(len(x), (batch,), generator=gen)
        xb = x[idx]
        if step % 2:
            xb = xb.flip(3)
        loss = F.cross_entropy(model(xb), y[idx], label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        pruner.step(step)
        with torch.no_grad():
            for (ew, eb), layer in zip(ema, layers):
                ew.mul_(0.995).add_(layer.weight, alpha=0.005)   # effective (masked) weight
                eb.mul_(0.995).add_(layer.bias, alpha=0.005)
        losses.append(loss.item())
        if step % 100 == 0:
            model.eval()
            with torch.no_grad():
                acc = (model(xv).argmax(1) == yv).float().mean().item()
            model.train()
            target, measured = pruner.history[max(pruner.history)] if pruner.history else (0.0, 0.0)
            print(f"step {step:5d}  loss={np.mean(losses[-100:]):.3f}  val_acc={acc:.3f}  "
                  f"sparsity={measured:.2f} (target {target:.2f})  lr={sched.get_last_lr()[0]:.4f}  "
                  f"{1000 * (time.time() - t0) / step:.1f} ms/step  rss={rss_mb():.1f} MB")
    print(f"end: rss={rss_mb():.1f} MB  wall={time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
