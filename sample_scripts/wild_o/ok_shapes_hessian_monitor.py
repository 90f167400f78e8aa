# expect: no_leak
# pattern: small CNN on synthetic shape images (torch.optim.AdamW) monitors loss-surface sharpness every 25 steps: the Hessian trace by Hutchinson probes and the top eigenvalue by power iteration, both through torch.autograd.grad(..., create_graph=True) Hessian-vector products on a fixed probe batch; the double-backward graphs are locals of the monitor and are released after each estimate, only floats go into the log, so memory spikes during each estimate and returns to the same level
# step_ms: 32
"""Sharpness tracking while training a small CNN.

Classifies 32x32 images of synthetic shapes (disc, square, triangle, cross,
ring, bar) with random size, position, rotation, contrast and noise.  Every
few steps the monitor estimates the Hessian trace (Hutchinson) and the
largest Hessian eigenvalue (power iteration on Hessian-vector products) of
the loss on a fixed probe batch, to see edge-of-stability behaviour as the
learning rate warms up.
"""
import argparse
import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

SHAPES = ["disc", "square", "triangle", "cross", "ring", "bar"]
SIZE = 32


def draw(shape, rng):
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    cx, cy = rng.uniform(10, 22, 2)
    r = rng.uniform(5, 10)
    a = rng.uniform(0, np.pi)
    u = (xx - cx) * np.cos(a) + (yy - cy) * np.sin(a)
    v = -(xx - cx) * np.sin(a) + (yy - cy) * np.cos(a)
    if shape == "disc":
        m = u ** 2 + v ** 2 < r ** 2
    elif shape == "ring":
        d = np.sqrt(u ** 2 + v ** 2)
        m = (d < r) & (d > 0.6 * r)
    elif shape == "square":
        m = (np.abs(u) < r * 0.8) & (np.abs(v) < r * 0.8)
    elif shape == "triangle":
        m = (v > -r * 0.6) & (v < r * 0.9 - 1.7 * np.abs(u))
    elif shape == "cross":
        m = ((np.abs(u) < r * 0.25) & (np.abs(v) < r)) | ((np.abs(v) < r * 0.25) & (np.abs(u) < r))
    else:
        m = (np.abs(u) < r) & (np.abs(v) < r * 0.3)
    img = m.astype(np.float32) * rng.uniform(0.4, 1.0) + rng.normal(0, 0.25, (SIZE, SIZE))
    return img.astype(np.float32)


def batch(rng, n):
    labels = rng.integers(0, len(SHAPES), n)
    x = np.stack([draw(SHAPES[k], rng) for k in labels])[:, None]
    return torch.from_numpy(x), torch.from_numpy(labels)


class ShapeNet(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.c1 = nn.Conv2d(1, c, 3, padding=1)
        self.c2 = nn.Conv2d(c, 2 * c, 3, padding=1)
        self.c3 = nn.Conv2d(2 * c, 2 * c, 3, padding=1)
        self.fc = nn.Linear(2 * c * 16, len(SHAPES))

    def forward(self, x):
        x = F.max_pool2d(F.softplus(self.c1(x)), 2)
        x = F.max_pool2d(F.softplus(self.c2(x)), 2)
        x = F.adaptive_avg_pool2d(F.softplus(self.c3(x)), 4)
        return self.fc(x.flatten(1))


class SharpnessMonitor:
    def __init__(self, model, probe_x, probe_y, n_probes=3, power_iters=6):
        self.model = model
        self.x, self.y = probe_x, probe_y
        self.n_probes, self.power_iters = n_probes, power_iters

    def _grads(self):
        params = [p for p in self.model.parameters() if p.requires_grad]
        loss = F.cross_entropy(self.model(self.x), self.y)
        return params, torch.autograd.grad(loss, params, create_graph=True)

    @staticmethod
    def _hvp(params, grads, vec):
        dot = sum((g * v).sum() for g, v in zip(grads, vec))
        return torch.autograd.grad(dot, params, retain_graph=True)

    def estimate(self):
        params, grads = self._grads()
        trace = 0.0
        for _ in range(self.n_probes):
            z = [torch.randint_like(p, 2) * 2 - 1 for p in params]
            hz = self._hvp(params, grads, z)
            trace += sum((a * b).sum() for a, b in zip(z, hz)).item()
        v = [torch.randn_like(p) for p in params]
        eig = 0.0
        for _ in range(self.power_iters):
            norm = math.sqrt(sum((t ** 2).sum().item() for t in v))
            v = [t / norm for t in v]
            hv = self._hvp(params, grads, v)
            eig = sum((a * b).sum() for a, b in zip(v, hv)).item()
            v = [t.detach() for t in hv]
        return trace / self.n_probes, eig


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=700)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=150)
    ap.add_argument("--monitor-every", type=int, default=25)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    model = ShapeNet()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / args.warmup))
    probe_x, probe_y = batch(rng, 64)
    monitor = SharpnessMonitor(model, probe_x, probe_y)
    curvature_log = []
    t0 = time.time()
    for step in range(1, args.steps + 1):
        x, y = batch(rng, args.batch)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()

        if step % args.monitor_every == 0:
            trace, top = monitor.estimate()
            acc = (logits.argmax(1) == y).float().mean().item()
            curvature_log.append((step, loss.item(), acc, trace, top))
        if step % 100 == 0:
            s, l, a, tr, ev = curvature_log[-1]
            lr = sched.get_last_lr()[0]
            print(f"step {s:4d}  loss {l:.3f}  acc {a:.2f}  tr(H) {tr:9.2f}  lambda_max {ev:8.2f}  "
                  f"2/lr {2 / lr:7.1f}  ({time.time() - t0:.1f}s)", flush=True)

    tops = np.array([r[4] for r in curvature_log])
    print(f"lambda_max: first {tops[0]:.2f}, peak {tops.max():.2f}, last {tops[-1]:.2f}")


if __name__ == "__main__":
    main()
