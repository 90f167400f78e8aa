# expect: leak
# holder: timer.records|records|StepTimer|timer
# pattern: a home-made section timer stores sys._getframe(1) with every measurement so report() can print file:line lazily; each stored frame object keeps the finished train_step() call's locals alive (the numpy window batch, its tensors, predictions)
# step_ms: 20
"""Multi-horizon forecasting of synthetic multivariate load curves with a TCN.

A small timing utility records how long each section of the training step
takes; to keep the hot path cheap it stores the caller's frame and only
resolves file/line/function names when the report is printed.
"""
import sys
import time
from collections import defaultdict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


class StepTimer:
    def __init__(self):
        self.records = []             # (section, seconds, caller frame)
        self._stack = []

    def section(self, name):
        self._stack.append(name)
        return self

    def __enter__(self):
        self._t = time.perf_counter()
        self._frame = sys._getframe(1)          # resolved lazily in report()
        return self

    def __exit__(self, *exc):
        name = self._stack.pop()
        self.records.append((name, time.perf_counter() - self._t, self._frame))
        self._frame = None
        return False

    def report(self, last=None):
        agg = defaultdict(list)
        where = {}
        for name, dt, frame in self.records[-last:] if last else self.records:
            agg[name].append(dt)
            where[name] = f"{frame.f_code.co_name}:{frame.f_lineno}"
        return "  ".join(f"{k}@{where[k]} {1e3 * np.mean(v):.1f}ms" for k, v in agg.items())


def make_series(n_series, length, rng):
    t = np.arange(length)
    daily = np.sin(2 * np.pi * t / 24)
    weekly = np.sin(2 * np.pi * t / 168)
    out = []
    for _ in range(n_series):
        a, b, c = rng.uniform(0.5, 2, 3)
        trend = c * t / length
        noise = np.cumsum(rng.normal(0, 0.05, length))
        out.append(a * daily + b * weekly + trend + noise + rng.normal(0, 0.2, length))
    return np.stack(out).astype(np.float32)


class TCN(nn.Module):
    def __init__(self, channels, hidden, horizon):
        super().__init__()
        layers, c_in = [], channels
        for d in (1, 2, 4, 8, 16):
            layers.append(nn.Conv1d(c_in, hidden, 3, dilation=d, padding=2 * d))
            c_in = hidden
        self.convs = nn.ModuleList(layers)
        self.head = nn.Linear(hidden, horizon * channels)
        self.horizon, self.channels = horizon, channels

    def forward(self, x):                          # x: (B, C, T)
        h = x
        for conv in self.convs:
            h = F.relu(conv(h)[..., : x.shape[-1]]) + (h if h.shape[1] == conv.out_channels else 0)
        return self.head(h[..., -1]).view(-1, self.channels, self.horizon)


timer = StepTimer()


def train_step(model, opt, series, rng, window=168, horizon=24, batch=32):
    with timer.section("sample"):
        starts = rng.integers(0, series.shape[1] - window - horizon, batch)
        idx = starts[:, None] + np.arange(window + horizon)[None, :]
        chunk = series[:, idx].transpose(1, 0, 2)           # (B, C, window + horizon)
        mu = chunk[..., :window].mean(-1, keepdims=True)
        sd = chunk[..., :window].std(-1, keepdims=True) + 1e-3
        chunk = (chunk - mu) / sd
        x = torch.from_numpy(np.ascontiguousarray(chunk[..., :window]))
        y = torch.from_numpy(np.ascontiguousarray(chunk[..., window:]))
    with timer.section("forward"):
        pred = model(x)
        loss = F.mse_loss(pred, y)
    with timer.section("backward"):
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


def main():
    rng = np.random.default_rng(2024)
    torch.manual_seed(2024)
    series = make_series(8, 24 * 7 * 60, rng)
    model = TCN(channels=8, hidden=32, horizon=24)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    n_steps = 950
    losses = []
    for step in range(1, n_steps + 1):
        losses.append(train_step(model, opt, series, rng))
        if step % 190 == 0:
            print(f"step {step:5d}  mse {np.mean(losses[-190:]):.4f}  {timer.report(last=600)}  "
                  f"{time.time() - t0:.1f}s", flush=True)
    print(f"done: {n_steps} steps, final mse {np.mean(losses[-100:]):.4f}, {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
