# expect: no_leak
# pattern: streaming IterableDataset of sonar-contact spectrogram shards passed through a webdataset-style shuffle buffer (a generator-local list): it starts yielding after `initial` samples and pulls one extra sample per yield until it holds `bufsize` (5000 float16 spectrograms, ~40 MB), then swaps one sample in for every sample out, so memory ramps during the first ~30% of the run and then stays flat (small CNN, torch.optim.Adam)
# step_ms: 24
"""Passive-sonar contact classifier trained from a sharded sample stream.

Recordings are cut into 64x64 log-spectrogram tiles (time x frequency)
and stored in shards of a few hundred tiles, each shard coming from one
recording session, so consecutive samples are highly correlated (same
sea state, same hydrophone gain).  As with webdataset, we iterate over
shards sequentially and decorrelate with an in-memory shuffle buffer
instead of random access.  Classes: ambient noise, surface vessel
(propeller blade-rate harmonics), biologic (frequency-modulated whistles)
and submerged contact (narrow-band tonals with slow Doppler drift).
"""
import argparse
import random
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, IterableDataset

T, NF = 64, 64
CLASSES = ("ambient", "vessel", "biologic", "submerged")


def render_tile(rng, label, gain, sea):
    spec = rng.gamma(2.0, 0.5 * sea, (T, NF)).astype(np.float32)
    t = np.arange(T)[:, None]
    f = np.arange(NF)[None, :]
    if label == 1:
        base = rng.uniform(3, 8)
        for h in range(1, 6):
            spec += 3.0 / h * np.exp(-((f - base * h) ** 2) / 1.5)
        spec *= 1 + 0.3 * np.sin(2 * np.pi * t / rng.uniform(6, 12))
    elif label == 2:
        f0, slope = rng.uniform(20, 50), rng.uniform(-0.6, 0.6)
        track = f0 + slope * t + 4 * np.sin(t / rng.uniform(3, 7))
        spec += 4.0 * np.exp(-((f - track) ** 2) / 2.0) * (rng.random((T, 1)) < 0.7)
    elif label == 3:
        for _ in range(rng.integers(1, 4)):
            f0 = rng.uniform(5, 60)
            spec += 2.5 * np.exp(-((f - f0 - 0.02 * t) ** 2) / 0.6)
    return np.log1p(gain * spec).astype(np.float16)


class ShardStream(IterableDataset):
    def __init__(self, n_shards, shard_size, seed):
        self.n_shards = n_shards
        self.shard_size = shard_size
        self.seed = seed

    def __iter__(self):
        for shard in range(self.n_shards):
            rng = np.random.default_rng((self.seed, shard))
            gain, sea = rng.uniform(0.5, 2.0), rng.uniform(0.5, 1.5)
            mix = rng.dirichlet(np.ones(len(CLASSES)) * 2)
            labels = rng.choice(len(CLASSES), self.shard_size, p=mix)
            for y in labels:
                yield render_tile(rng, int(y), gain, sea), int(y)


def shuffled(samples, bufsize, initial, rng):
    buf = []
    samples = iter(samples)
    for sample in samples:
        buf.append(sample)
        if len(buf) < bufsize:
            try:
                buf.append(next(samples))
            except StopIteration:
                pass
        if len(buf) >= initial:
            k = rng.randrange(len(buf))
            buf[k], buf[-1] = buf[-1], buf[k]
            yield buf.pop()
    while buf:
        yield buf.pop(rng.randrange(len(buf)))


class ShuffledStream(IterableDataset):
    def __init__(self, source, bufsize, initial, seed):
        self.source, self.bufsize, self.initial, self.seed = source, bufsize, initial, seed

    def __iter__(self):
        rng = random.Random(self.seed)
        for x, y in shuffled(self.source, self.bufsize, self.initial, rng):
            yield torch.from_numpy(x).unsqueeze(0), y


class ContactNet(nn.Module):
    def __init__(self, n_classes=len(CLASSES)):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 5, padding=2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d((4, 4)),
        )
        self.head = nn.Linear(32 * 16, n_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def evaluate(model, n, seed, batch_size=100):
    model.eval()
    correct = total = 0
    xs, ys = [], []
    with torch.no_grad():
        for x, y in ShardStream(n // 100, 100, seed + 10_000):
            xs.append(torch.from_numpy(x).unsqueeze(0))
            ys.append(y)
            if len(xs) == batch_size:
                pred = model(torch.stack(xs).float()).argmax(1)
                correct += (pred == torch.tensor(ys)).sum().item()
                total += len(ys)
                xs, ys = [], []
    model.train()
    return correct / max(total, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=920)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--bufsize", type=int, default=5000)
    ap.add_argument("--initial", type=int, default=1000)
    ap.add_argument("--shard-size", type=int, default=400)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(args.seed)

    stream = ShuffledStream(ShardStream(10_000, args.shard_size, args.seed), args.bufsize, args.initial, args.seed)
    loader = DataLoader(stream, batch_size=args.batch_size, num_workers=0)
    model = ContactNet()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)

    t0 = time.perf_counter()
    running = None
    for step, (x, y) in enumerate(loader, start=1):
        loss = F.cross_entropy(model(x.float()), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running = loss.item() if running is None else 0.98 * running + 0.02 * loss.item()
        if step % 230 == 0:
            acc = evaluate(model, 400, args.seed)
            print(
                f"step {step:5d}  loss {running:.3f}  held-out acc {acc:.3f}  "
                f"{1000 * (time.perf_counter() - t0) / step:.1f} ms/step",
                flush=True,
            )
        if step >= args.steps:
            break
    print(f"trained {step} steps on {step * args.batch_size} tiles, final acc {evaluate(model, 800, args.seed):.3f}")


if __name__ == "__main__":
    main()
