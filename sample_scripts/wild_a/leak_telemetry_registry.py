# expect: leak
# holder: _telemetry|telemetry
# pattern: module-level telemetry registry (dict of lists) filled by a helper emit() every step with small detached tensors; flush() summarises but never clears (slow leak, ~3 KB/step)
# step_ms: 1
"""Tiny MLP fitted to a noisy 2-D function with a lightweight telemetry helper.

emit(tag, step, value) appends (step, tensor) pairs to the module-level
`_telemetry` registry: per-sample losses for 'hard example' analysis plus one gradient
norm per parameter every 10 steps.  flush() prints summaries of the most
recent window but never drops the old entries, so the registry grows by a few KB
per step - a slow leak that only shows up in long jobs.
Fix: clear the lists in flush() (or keep running sums / a deque(maxlen=...)).
"""
import time
from collections import defaultdict

import torch
import torch.nn as nn

_telemetry = defaultdict(list)


def emit(tag, step, value):
    if torch.is_tensor(value):
        value = value.detach().clone()
    _telemetry[tag].append((step, value))


def flush(step, window=500):
    lines = []
    for tag in sorted(_telemetry):
        recent = [v for s, v in _telemetry[tag] if s > step - window]
        if not recent:
            continue
        if torch.is_tensor(recent[0]) and recent[0].dim() > 0:
            flat = torch.cat(recent)
            lines.append(f"{tag}: mean {flat.mean():.4f} p99 {flat.quantile(0.99):.4f}")
        else:
            lines.append(f"{tag}: {float(sum(recent)) / len(recent):.4f}")
    return lines


def field(x):
    return torch.sin(3 * x[:, :1]) * torch.cos(2 * x[:, 1:]) + 0.1 * x[:, :1] ** 2


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3000, gamma=0.5)
    steps = 12000
    t0 = time.time()
    last = t0
    for step in range(1, steps + 1):
        x = torch.rand(256, 2) * 4 - 2
        y = field(x) + 0.05 * torch.randn(256, 1)
        per_sample = (model(x) - y).pow(2).squeeze(1)
        loss = per_sample.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()

        emit("loss/per_sample", step, per_sample)
        if step % 10 == 0:
            for name, p in model.named_parameters():
                emit(f"grad_norm/{name}", step, p.grad.norm())

        if time.time() - last > 4.0:
            summary = flush(step)
            print(f"step {step}  ({time.time() - t0:.1f}s)  " + " | ".join(summary[:2]), flush=True)
            last = time.time()
    print(f"done: {steps} steps in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
