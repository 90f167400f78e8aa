# expect: no_leak
# pattern: inference-only anomaly scoring (no optimizer, inference_mode) feeds every per-pixel reconstruction error (and every frame score, into a second small sketch) into a QuantileSketch metric object: values go into a preallocated 2M-slot buffer that is compressed into at most 2048 weighted centroids whenever it fills, so the metric state stops growing after the first fill
# step_ms: 15
"""Streaming anomaly scoring for a line-scan inspection camera.

A small convolutional autoencoder (weights are fitted briefly at start-up on
defect-free frames) scores a stream of frames.  Per-pixel reconstruction
errors and per-frame scores are summarised by mergeable quantile sketches,
so the alarm threshold can be tracked without keeping the raw errors.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(53)

N_FIT_STEPS = 150
N_FRAMES_BATCHES = 1000
BATCH = 16
SIZE = 48
SEED = 53


class QuantileSketch:
    """Buffered quantile summary: raw values are batched, then merged into
    a bounded set of weighted centroids (equal-weight bins)."""

    def __init__(self, buffer_size=2_000_000, max_centroids=2048):
        self.buffer = np.empty(buffer_size, np.float64)
        self.fill = 0
        self.max_centroids = max_centroids
        self.means = np.empty(0, np.float64)
        self.weights = np.empty(0, np.float64)
        self.count = 0
        self.compressions = 0

    def update(self, values):
        values = np.asarray(values, np.float64).ravel()
        self.count += values.size
        while values.size:
            take = min(values.size, self.buffer.size - self.fill)
            self.buffer[self.fill:self.fill + take] = values[:take]
            self.fill += take
            values = values[take:]
            if self.fill == self.buffer.size:
                self._compress()

    def _compress(self):
        if self.fill == 0:
            return
        pts = np.concatenate([self.means, self.buffer[:self.fill]])
        w = np.concatenate([self.weights, np.ones(self.fill)])
        order = np.argsort(pts, kind="stable")
        pts, w = pts[order], w[order]
        cum = np.cumsum(w)
        targets = np.linspace(0.0, cum[-1], self.max_centroids + 1)[:-1]
        starts = np.unique(np.searchsorted(cum, targets, side="right"))
        starts = starts[starts < pts.size]
        wsum = np.add.reduceat(w, starts)
        self.means = np.add.reduceat(pts * w, starts) / wsum
        self.weights = wsum
        self.fill = 0
        self.compressions += 1

    def quantile(self, q):
        self._compress()
        centers = np.cumsum(self.weights) - self.weights / 2
        return float(np.interp(q * self.weights.sum(), centers, self.means))


class ConvAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
        )
        self.dec = nn.Sequential(
            nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1), nn.ReLU(),
            nn.ConvTranspose2d(16, 1, 4, stride=2, padding=1),
        )

    def forward(self, x):
        return self.dec(self.enc(x))


def frames(rng, n, defect_rate=0.0):
    x = np.linspace(0, 1, SIZE, dtype=np.float32)
    stripes = 0.5 + 0.3 * np.sin(2 * np.pi * (6 * x[None, :] + rng.uniform(0, 1, size=(n, 1))))
    img = np.repeat(stripes[:, None, :], SIZE, axis=1)
    img += 0.03 * rng.standard_normal(img.shape)
    defects = rng.random(n) < defect_rate
    for i in np.flatnonzero(defects):
        r, c = rng.integers(4, SIZE - 8, size=2)
        img[i, r:r + 4, c:c + 4] += rng.uniform(0.3, 0.6)
    return torch.from_numpy(img[:, None].astype(np.float32)), defects


def main():
    rng = np.random.default_rng(SEED)
    model = ConvAE()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for _ in range(N_FIT_STEPS):
        x, _ = frames(rng, BATCH)
        loss = F.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
    del opt
    model.eval()
    print(f"fitted autoencoder, recon mse {loss.item():.5f}", flush=True)

    sketch = QuantileSketch()
    frame_sketch = QuantileSketch(buffer_size=4096, max_centroids=256)
    alarms = hits = n_defects = 0
    threshold = None
    start = last = time.perf_counter()
    for b in range(1, N_FRAMES_BATCHES + 1):
        x, defects = frames(rng, BATCH, defect_rate=0.02)
        with torch.inference_mode():
            err = (model(x) - x).pow(2).squeeze(1)
        err_np = err.numpy()
        sketch.update(err_np)
        flat = err_np.reshape(BATCH, -1)
        frame_score = np.partition(flat, -16, axis=1)[:, -16:].mean(axis=1)
        frame_sketch.update(frame_score)
        if threshold is not None:
            flagged = frame_score > threshold
            alarms += int(flagged.sum())
            hits += int((flagged & defects).sum())
        n_defects += int(defects.sum())
        if b % 50 == 0:
            threshold = frame_sketch.quantile(0.98)

        now = time.perf_counter()
        if now - last >= 1.0:
            print(
                f"[{now - start:5.1f}s] batch {b}/{N_FRAMES_BATCHES} pixels={sketch.count} "
                f"p50={sketch.quantile(0.5):.2e} p99.9={sketch.quantile(0.999):.2e} "
                f"alarms={alarms} hits={hits}/{n_defects}",
                flush=True,
            )
            last = now

    print(f"done in {time.perf_counter() - start:.1f}s; {sketch.compressions} compressions, "
          f"{sketch.means.size} centroids, alarms {alarms}, hits {hits}/{n_defects}")


if __name__ == "__main__":
    main()
