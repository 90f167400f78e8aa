# expect: leak
# holder: failures|exc_info|traceback
# pattern: retry loop stores sys.exc_info() of every failed attempt on the trainer; each traceback pins the frames' locals (batch, activations, partial autograd graph)
# step_ms: 14
"""Activity recognition from multichannel IMU windows with a 1-D CNN, with a
retry-on-glitch training step.

Some recordings contain sensor glitches (+/-inf samples). Rather than crash,
``Trainer.fit`` retries the step after sanitising the batch, and records
every failure so the end-of-run report can show where and why steps failed:
``self.failures.append((step, attempt, sys.exc_info()))``.

``sys.exc_info()`` includes the traceback, and a traceback references every
frame between the ``try`` and the ``raise``: ``train_step`` (the batch),
``IMUNet.forward`` (the activations computed so far, with their autograd
graph and its saved tensors) and ``check_finite``. None of these can be
freed while the report list holds the traceback, so every glitchy batch
leaks about a megabyte.

Fix: store ``(step, attempt, type(e).__name__, str(e))`` or
``traceback.format_exc()`` (a string), not the exc_info tuple or the
exception object itself.
"""

import argparse
import random
import sys
import time
from collections import Counter

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

N_CLASSES = 6
CHANNELS = 9
WINDOW = 256


class NonFiniteActivation(FloatingPointError):
    pass


def check_finite(t, where):
    if not torch.isfinite(t).all():
        raise NonFiniteActivation(f"non-finite values after {where}")


class IMUNet(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.stem = nn.Conv1d(CHANNELS, width, 7, padding=3)
        self.blocks = nn.ModuleList(
            [
                nn.Sequential(
                    nn.BatchNorm1d(width), nn.ReLU(), nn.Conv1d(width, width, 5, padding=2)
                )
                for _ in range(4)
            ]
        )
        self.head = nn.Linear(width, N_CLASSES)

    def forward(self, x):
        h = self.stem(x)
        check_finite(h, "stem")
        for i, blk in enumerate(self.blocks):
            h = h + blk(h)
            check_finite(h, f"block{i}")
        return self.head(h.mean(dim=-1))


class GlitchyIMUStream:
    """Synthetic activity windows; about one batch in ten has a glitch."""

    def __init__(self, batch_size, seed, glitch_rate=0.1):
        self.batch_size = batch_size
        self.rng = np.random.default_rng(seed)
        self.glitch_rate = glitch_rate
        self.freqs = self.rng.uniform(0.5, 6.0, size=(N_CLASSES, CHANNELS)).astype(np.float32)

    def __iter__(self):
        t = np.linspace(0, 4, WINDOW, dtype=np.float32)
        while True:
            y = self.rng.integers(0, N_CLASSES, size=self.batch_size)
            phase = self.rng.uniform(0, 6.28, size=(self.batch_size, CHANNELS, 1)).astype(
                np.float32
            )
            x = np.sin(self.freqs[y][:, :, None] * t + phase)
            x += 0.3 * self.rng.standard_normal(x.shape).astype(np.float32)
            if self.rng.random() < self.glitch_rate:
                b, c = self.rng.integers(0, self.batch_size), self.rng.integers(0, CHANNELS)
                x[b, c, self.rng.integers(0, WINDOW, size=3)] = np.inf
            yield torch.from_numpy(x), torch.from_numpy(y)


class Trainer:
    def __init__(self, model, lr, max_retries=2):
        self.model = model
        self.opt = torch.optim.AdamW(model.parameters(), lr=lr)
        self.max_retries = max_retries
        self.failures = []

    def train_step(self, x, y):
        logits = self.model(x)
        loss = F.cross_entropy(logits, y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss.item(), (logits.argmax(1) == y).float().mean().item()

    @staticmethod
    def sanitize(x):
        return torch.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)

    def fit(self, stream, steps, log_every=100):
        t0 = time.time()
        it = iter(stream)
        for step in range(1, steps + 1):
            x, y = next(it)
            for attempt in range(self.max_retries + 1):
                try:
                    loss, acc = self.train_step(x, y)
                    break
                except FloatingPointError:
                    self.failures.append((step, attempt, sys.exc_info()))
                    x = self.sanitize(x)
            if step % log_every == 0:
                ms = (time.time() - t0) / step * 1e3
                print(
                    f"step {step:4d}  loss {loss:.3f}  acc {acc:.2f}  "
                    f"failed attempts so far {len(self.failures)}  {ms:.1f} ms/step",
                    flush=True,
                )

    def report(self):
        where = Counter(str(exc) for _, _, (_, exc, _) in self.failures)
        print(f"{len(self.failures)} failed attempts:")
        for msg, n in where.most_common(5):
            print(f"  {n:4d} x {msg}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)

    trainer = Trainer(IMUNet(), lr=2e-3)
    trainer.fit(GlitchyIMUStream(args.batch, args.seed), args.steps)
    trainer.report()


if __name__ == "__main__":
    main()
