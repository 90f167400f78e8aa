# expect: no_leak
# pattern: graph-attached micro-batch losses are summed into accum_loss (`accum_loss = accum_loss + loss`) so one backward() covers the whole accumulation window; the window (accum_steps) ramps 1->2->4->8->16 micro-batches over the first ~quarter of the run, then stays at 16, and accum_loss is reset to 0.0 right after backward()/step(), so the retained graphs saw-tooth with a staircase peak and are bounded by 16 micro-batches of activations (1D CNN, torch.optim.AdamW)
# step_ms: 25
"""Arrhythmia classification on synthetic single-lead ECG windows with a 1D CNN.

The effective batch size is warmed up instead of the learning rate: the number
of micro-batches accumulated per optimizer step doubles every
--accum-warmup-steps optimizer steps until it reaches --max-accum.  The
micro-batch losses are summed and back-propagated once per optimizer step.
"""
import argparse
import math
import time

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

RHYTHMS = ["sinus", "afib", "pvc", "brady", "tachy"]


class ECGWindows:
    """Synthetic 4 s windows at 256 Hz with rhythm-dependent beat timing and morphology."""

    def __init__(self, seed, length=1024, fs=256):
        self.rng = np.random.default_rng(seed)
        self.length = length
        self.fs = fs
        t = np.arange(-40, 41) / fs
        self.qrs = np.exp(-(t / 0.012) ** 2) - 0.25 * np.exp(-((t - 0.03) / 0.02) ** 2)
        self.wide_qrs = np.exp(-(t / 0.035) ** 2)

    def _window(self, label):
        rate = {0: 70, 1: 90, 2: 75, 3: 45, 4: 130}[label] / 60.0
        x = np.zeros(self.length + 100)
        pos = self.rng.uniform(0, 1 / rate) * self.fs
        while pos < self.length:
            rr = 1 / rate
            if label == 1:
                rr *= self.rng.uniform(0.6, 1.4)
            shape = self.wide_qrs if (label == 2 and self.rng.random() < 0.3) else self.qrs
            i = int(pos)
            x[i:i + len(shape)] += shape
            pos += rr * self.fs
        x = x[:self.length]
        baseline = 0.2 * np.sin(2 * math.pi * self.rng.uniform(0.1, 0.4) * np.arange(self.length) / self.fs)
        return x + baseline + 0.05 * self.rng.standard_normal(self.length)

    def batch(self, n):
        y = self.rng.integers(0, len(RHYTHMS), n)
        x = np.stack([self._window(int(c)) for c in y]).astype(np.float32)
        return torch.from_numpy(x).unsqueeze(1), torch.from_numpy(y)


class ECGNet(nn.Module):
    def __init__(self, n_classes=len(RHYTHMS), width=16):
        super().__init__()
        layers, cin = [], 1
        for i, cout in enumerate([width, width, 2 * width, 2 * width, 4 * width]):
            layers += [nn.Conv1d(cin, cout, 7, stride=1 if i == 0 else 2, padding=3),
                       nn.BatchNorm1d(cout), nn.GELU()]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(cin, n_classes)

    def forward(self, x):
        return self.head(self.features(x).mean(dim=2))


def accumulation_schedule(opt_step, warmup, max_accum):
    return min(max_accum, 2 ** (opt_step // warmup))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--micro-batches", type=int, default=640)
    parser.add_argument("--micro-batch-size", type=int, default=16)
    parser.add_argument("--max-accum", type=int, default=16)
    parser.add_argument("--accum-warmup-steps", type=int, default=10)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--log-every-s", type=float, default=2.5)
    parser.add_argument("--seed", type=int, default=4)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    data = ECGWindows(args.seed)
    model = ECGNet()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)

    opt_step = 0
    accum_steps = accumulation_schedule(opt_step, args.accum_warmup_steps, args.max_accum)
    accum_loss, in_window, window_correct, window_seen = 0.0, 0, 0, 0
    recent = []
    t0 = last_log = time.time()
    for micro in range(1, args.micro_batches + 1):
        x, y = data.batch(args.micro_batch_size)
        logits = model(x)
        loss = F.cross_entropy(logits, y) / accum_steps
        accum_loss = accum_loss + loss
        window_correct += (logits.detach().argmax(1) == y).sum().item()
        window_seen += len(y)
        in_window += 1

        if in_window == accum_steps:
            accum_loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            recent = (recent + [accum_loss.item()])[-20:]
            opt_step += 1
            accum_loss, in_window = 0.0, 0
            accum_steps = accumulation_schedule(opt_step, args.accum_warmup_steps, args.max_accum)

        now = time.time()
        if now - last_log >= args.log_every_s:
            print(f"micro {micro:5d}  opt step {opt_step:4d}  accum {accum_steps:2d} "
                  f"(eff. batch {accum_steps * args.micro_batch_size:4d})  "
                  f"loss {np.mean(recent) if recent else float('nan'):.3f}  "
                  f"acc {window_correct / max(window_seen, 1):.3f}", flush=True)
            window_correct = window_seen = 0
            last_log = now

    print(f"done: {opt_step} optimizer steps, {args.micro_batches} micro-batches in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
