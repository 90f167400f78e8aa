# expect: no_leak
# pattern: texture-classification CNN (~2.2M params, torch.optim.AdamW, ~70 ms steps) with NMT-style checkpoint averaging: every 10 steps the floating-point state_dict is flattened into one detached vector (torch.cat, ~8.5 MB) is pushed into a collections.deque(maxlen=10) and every 40 steps the window is averaged into a persistent eval copy of the model; the deque fills after 100 of 200 steps (half the run), so memory climbs in ~8.5 MB stairs for the first half and is flat afterwards because every new snapshot evicts the oldest one
# step_ms: 70
"""Checkpoint-window averaging for a texture classifier.

Keeps the last WINDOW in-memory snapshots (taken every SNAP_EVERY steps) and
periodically evaluates the uniform average of the window, as in the
"average the last N checkpoints" trick from machine translation.
"""
import contextlib
import copy
import logging
import math
import time
from collections import deque

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger("ckpt-avg")

STEPS = 200
SNAP_EVERY = 10
WINDOW = 10
EVAL_EVERY = 40
BATCH = 32
IMG = 32
N_CLASSES = 12


@contextlib.contextmanager
def timed(bucket, key):
    t0 = time.perf_counter()
    try:
        yield
    finally:
        bucket[key] = bucket.get(key, 0.0) + time.perf_counter() - t0


class TextureBank:
    """Procedural textures: oriented gratings + blobs + noise, one recipe per class."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        r = np.random.default_rng(1000)
        self.freq = r.uniform(0.08, 0.45, N_CLASSES)
        self.theta = r.uniform(0, np.pi, N_CLASSES)
        self.blob = r.uniform(0.0, 1.0, N_CLASSES)
        self.tint = r.uniform(0.3, 1.0, (N_CLASSES, 3))
        yy, xx = np.mgrid[0:IMG, 0:IMG]
        self.yy, self.xx = yy.astype(np.float32), xx.astype(np.float32)

    def sample(self, n):
        y = self.rng.integers(0, N_CLASSES, n)
        th = self.theta[y][:, None, None] + self.rng.normal(0, 0.15, (n, 1, 1))
        f = self.freq[y][:, None, None] * self.rng.uniform(0.9, 1.1, (n, 1, 1))
        ph = self.rng.uniform(0, 2 * np.pi, (n, 1, 1))
        g = np.sin(2 * np.pi * f * (self.xx * np.cos(th) + self.yy * np.sin(th)) + ph)
        cx, cy = self.rng.uniform(0, IMG, (2, n, 1, 1))
        blob = np.exp(-((self.xx - cx) ** 2 + (self.yy - cy) ** 2) / 60.0)
        img = g + self.blob[y][:, None, None] * 2 * blob
        img = img[:, None] * self.tint[y][:, :, None, None]
        img += self.rng.normal(0, 0.35, img.shape)
        return torch.from_numpy(img.astype(np.float32)), torch.from_numpy(y)


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True))


class TextureNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(block(3, 24), nn.MaxPool2d(2), block(24, 48), nn.MaxPool2d(2),
                                      block(48, 96), nn.MaxPool2d(2), block(96, 192))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(192 * 4 * 4, 512), nn.ReLU(), nn.Dropout(0.2),
                                  nn.Linear(512, N_CLASSES))

    def forward(self, x):
        h = self.features(x)
        return self.head(F.adaptive_avg_pool2d(h, 4))


def snapshot(model):
    """All floating-point state (weights and BN statistics) as one flat detached vector."""
    return torch.cat([t.detach().reshape(-1) for t in model.state_dict().values()
                      if t.is_floating_point()])


@torch.no_grad()
def load_window_average(target, window):
    acc = torch.zeros_like(window[0])
    for snap in window:
        acc.add_(snap)
    acc /= len(window)
    offset = 0
    for t in target.state_dict().values():
        if t.is_floating_point():
            n = t.numel()
            t.copy_(acc[offset:offset + n].view_as(t))
            offset += n
    assert offset == acc.numel()


@torch.no_grad()
def accuracy(model, xs, ys):
    model.eval()
    hits = sum(int((model(x).argmax(1) == y).sum()) for x, y in zip(xs, ys))
    return hits / sum(len(y) for y in ys)


def main():
    logging.basicConfig(level=logging.INFO, format="%(relativeCreated)7.0f ms  %(message)s")
    torch.manual_seed(0)
    bank = TextureBank(seed=0)
    val = [bank.sample(128) for _ in range(3)]
    val_x, val_y = [v[0] for v in val], [v[1] for v in val]

    model = TextureNet()
    n_params = sum(p.numel() for p in model.parameters())
    log.info("TextureNet: %.2fM parameters, snapshot ~%.1f MB", n_params / 1e6, n_params * 4 / 2 ** 20)
    eval_model = copy.deepcopy(model)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)
    warm = 15
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, STEPS) / STEPS)))

    window = deque(maxlen=WINDOW)
    clock = {}
    for step in range(1, STEPS + 1):
        model.train()
        with timed(clock, "data"):
            x, y = bank.sample(BATCH)
        with timed(clock, "train"):
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
        if step % SNAP_EVERY == 0:
            with timed(clock, "snapshot"):
                window.append(snapshot(model))
        if step % EVAL_EVERY == 0:
            with timed(clock, "eval"):
                load_window_average(eval_model, list(window))
                acc_avg = accuracy(eval_model, val_x, val_y)
                acc_last = accuracy(model, val_x, val_y)
            log.info("step %3d  loss %.3f  acc(last) %.3f  acc(avg of %d) %.3f  %s", step, loss.item(),
                     acc_last, len(window), acc_avg,
                     " ".join(f"{k}={1000 * v / step:.1f}ms" for k, v in clock.items()))
    log.info("done: window holds %d snapshots", len(window))


if __name__ == "__main__":
    main()
