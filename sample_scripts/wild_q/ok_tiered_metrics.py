# expect: no_leak
# pattern: deep ReLU MLP jet tagger (torch.optim.SGD with Nesterov momentum, OneCycleLR) with per-unit health monitoring: forward hooks overwrite the latest activation stats per layer, and every step a ~16 KB float32 vector (per-unit mean activation and dead fraction for 6 layers, activation histograms, per-parameter grad/update/weight norms) goes into an RRD-style TieredSeries: raw samples in a deque(maxlen=1000), 10-step rollups in a deque(maxlen=200) and 100-step rollups in a deque(maxlen=20), each rollup built from a running sum that is reset when it is emitted; the raw tier fills by step 1000 and the coarser tiers by step 2000 of 3200, so memory climbs in two slopes and is flat for the rest of the run (small bumps at the periodic validation passes)
# step_ms: 6
"""Deep MLP jet tagger with round-robin (RRD-style) unit-health telemetry.

Synthetic "jets" are described by 48 high-level features (mass, n-subjettiness
ratios, track multiplicities, energy-correlation functions); signal jets
(boosted top quarks) differ from QCD background in a handful of them.  The
classifier is an 6-layer ReLU MLP, which is prone to dying units, so we
monitor per-unit activation statistics and gradient/update norms every step.
The monitor keeps the series like an RRD database: full resolution for the
recent past, coarser averages further back, fixed size per tier.
"""
import argparse
import time
from collections import deque

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

N_FEAT = 48


def make_jets(rng, n):
    y = rng.random(n) < 0.5
    x = rng.standard_normal((n, N_FEAT)).astype(np.float32)
    x[:, 0] += np.where(y, 1.2, 0.0)                    # jet mass near m_top
    x[:, 1] -= np.where(y, 0.9, 0.0)                    # tau32
    x[:, 2] += np.where(y, 0.6, 0.0) * x[:, 3]          # correlated ECF
    x[:, 4] = np.abs(x[:, 4]) * np.where(y, 1.5, 1.0)   # track multiplicity spread
    x[:, 5:9] += 0.3 * y[:, None]
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))


class JetMLP(nn.Module):
    def __init__(self, width=320, depth=6):
        super().__init__()
        dims = [N_FEAT] + [width] * depth
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        for layer in self.layers:
            nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
            nn.init.zeros_(layer.bias)
        self.out = nn.Linear(width, 1)

    def forward(self, x):
        for layer in self.layers:
            x = F.relu(layer(x))
        return self.out(x).squeeze(-1)


class TieredSeries:
    """Fixed-size multi-resolution store: raw, then averages of `factor` samples per tier."""

    def __init__(self, capacities=(1000, 200, 20), factor=10):
        self.tiers = [deque(maxlen=c) for c in capacities]
        self.factor = factor
        self.sums = [None] * (len(capacities) - 1)
        self.counts = [0] * (len(capacities) - 1)

    def add(self, step, vec):
        self.tiers[0].append((step, vec))
        self._roll(0, step, vec)

    def _roll(self, level, step, vec):
        if level >= len(self.sums):
            return
        self.sums[level] = vec.astype(np.float32, copy=True) if self.sums[level] is None else self.sums[level] + vec
        self.counts[level] += 1
        if self.counts[level] == self.factor:
            avg = self.sums[level] / self.factor
            self.sums[level], self.counts[level] = None, 0
            self.tiers[level + 1].append((step, avg))
            self._roll(level + 1, step, avg)

    def sizes(self):
        return [len(t) for t in self.tiers]

    def latest(self, level=0):
        return self.tiers[level][-1][1] if self.tiers[level] else None


class UnitMonitor:
    def __init__(self, model, bins=32):
        self.model = model
        self.bins = bins
        self.acts = {}
        for i, layer in enumerate(model.layers):
            layer.register_forward_hook(self._hook(i))
        self.prev = [p.detach().clone() for p in model.parameters()]

    def _hook(self, i):
        def fn(module, inp, out):
            if module.training:
                a = F.relu(out.detach())
                self.acts[i] = (a.mean(0), (a <= 0).float().mean(0),
                                torch.histc(a, bins=self.bins, min=0.0, max=4.0))
        return fn

    def snapshot(self):
        parts = []
        for i in range(len(self.model.layers)):
            m, dead, hist = self.acts[i]
            parts += [m, dead, hist / hist.sum().clamp_min(1)]
        gstats = []
        for p, q in zip(self.model.parameters(), self.prev):
            gstats += [p.grad.norm(), (p.detach() - q).norm(), p.detach().norm()]
            q.copy_(p.detach())
        parts.append(torch.stack(gstats))
        return torch.cat(parts).numpy()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=3200)
    p.add_argument("--batch-size", type=int, default=96)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--log-every", type=int, default=320)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)
    model = JetMLP()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True, weight_decay=5e-5)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps)
    monitor = UnitMonitor(model)
    series = TieredSeries()
    xv, yv = make_jets(np.random.default_rng(123), 4000)

    t0 = time.perf_counter()
    losses = []
    for step in range(1, args.steps + 1):
        x, y = make_jets(rng, args.batch_size)
        loss = F.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        series.add(step, monitor.snapshot())

        if step % args.log_every == 0:
            model.eval()
            with torch.no_grad():
                acc = ((model(xv) > 0).float() == yv).float().mean().item()
            model.train()
            n_layers = len(model.layers)
            width = model.layers[0].out_features
            recent = np.stack([v for _, v in list(series.tiers[0])[-100:]])
            dead = recent[:, :n_layers * (2 * width + monitor.bins)].reshape(len(recent), n_layers, -1)[:, :, width:2 * width]
            ms = (time.perf_counter() - t0) * 1000 / step
            print(f"step {step:5d}  loss {np.mean(losses[-args.log_every:]):.4f}  val_acc {acc:.3f}  "
                  f"always-dead units {(dead.min(0) > 0.999).sum()}  tiers {series.sizes()}  {ms:.1f} ms/step",
                  flush=True)


if __name__ == "__main__":
    main()
