# expect: no_leak
# holder:
# pattern: tiled batch inference of a small fully-convolutional land-cover segmenter over large synthetic aerial scenes (torch under torch.inference_mode, no optimizer; one step = one batch of 8 overlapping 128x128 tiles, ~22 ms, code in main() + a StagingPool, a TileBatch class and a Stitcher). It looks like the "weakref.finalize keeps every staging buffer" pile-up: every TileBatch takes an 8x3x128x128 float32 staging tensor (~1.5 MB) from a process-wide StagingPool and registers weakref.finalize(self, pool.give_back, buf) so the buffer goes back to the pool when the batch dies, and the pool is a module global that outlives everything. But the finalizer's callback is the pool's bound method and its argument is the buffer, not the batch, so the finalize registry never references the TileBatch; when the loop drops the batch the finalizer runs, is removed from the registry, and give_back() keeps at most max_free=3 buffers (extras are simply dropped). The per-scene probability mosaic and blending weights are allocated once and reused (zeroed) for every scene of the same size, and only a few floats per scene are kept, so memory is flat after the first batches.
# step_ms: 22
"""Tiled inference over large aerial scenes.

Scenes are cut into overlapping tiles, tiles are packed into batches in
pooled staging tensors, the segmenter runs on each batch and the per-tile
class probabilities are blended back into a scene mosaic.
"""
import os
import time
import weakref

import numpy as np
import psutil
import torch
import torch.nn as nn
import torch.nn.functional as F

SCENE = 1024
TILE = 128
STRIDE = 112
BATCH = 8
N_CLASSES = 6
N_SCENES = 64


def rss_mb():
    return psutil.Process(os.getpid()).memory_info().rss / 2**20


class StagingPool:
    """Recycles pinned-size staging tensors between batches."""

    def __init__(self, shape, max_free=3):
        self.shape = shape
        self.max_free = max_free
        self._free = []
        self.allocated = 0

    def take(self):
        if self._free:
            return self._free.pop()
        self.allocated += 1
        return torch.empty(self.shape)

    def give_back(self, buf):
        if len(self._free) < self.max_free:
            self._free.append(buf)


POOL = StagingPool((BATCH, 3, TILE, TILE))


class TileBatch:
    def __init__(self, pool, scene, coords, mean, std):
        self.buf = pool.take()
        self.coords = coords
        weakref.finalize(self, pool.give_back, self.buf)
        for i, (y, x) in enumerate(coords):
            tile = torch.from_numpy(scene[y:y + TILE, x:x + TILE])
            self.buf[i].copy_(tile.permute(2, 0, 1))
        n = len(coords)
        self.x = self.buf[:n].sub_(mean).div_(std)


class LandCoverFCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.e1 = nn.Conv2d(3, 12, 3, padding=1)
        self.e2 = nn.Conv2d(12, 24, 3, stride=2, padding=1)
        self.e3 = nn.Conv2d(24, 24, 3, padding=2, dilation=2)
        self.out = nn.Conv2d(24 + 12, N_CLASSES, 1)
        nn.init.zeros_(self.out.bias)

    def forward(self, x):
        a = F.relu(self.e1(x))
        b = F.relu(self.e2(a))
        b = F.relu(self.e3(b))
        b = F.interpolate(b, scale_factor=2, mode="nearest")
        return self.out(torch.cat([a, b], 1))


class Stitcher:
    def __init__(self):
        self.prob = None
        self.weight = None
        r = np.hanning(TILE + 2)[1:-1].astype(np.float32)
        self.window = torch.from_numpy(np.outer(r, r)) + 1e-3

    def reset(self, h, w):
        if self.prob is None or self.prob.shape[1:] != (h, w):
            self.prob = torch.zeros(N_CLASSES, h, w)
            self.weight = torch.zeros(h, w)
        else:
            self.prob.zero_()
            self.weight.zero_()

    def add(self, probs, coords):
        for p, (y, x) in zip(probs, coords):
            self.prob[:, y:y + TILE, x:x + TILE] += p * self.window
            self.weight[y:y + TILE, x:x + TILE] += self.window

    def labels(self):
        return (self.prob / self.weight).argmax(0)


def make_scene(rng):
    """Synthetic aerial scene: smooth land-cover fields + texture, uint8 RGB."""
    coarse = rng.random((SCENE // 64, SCENE // 64, 3)).astype(np.float32)
    field = np.kron(coarse, np.ones((64, 64, 1), np.float32))
    yy, xx = np.mgrid[0:SCENE, 0:SCENE].astype(np.float32)
    river = np.exp(-((yy - SCENE / 2 - 120 * np.sin(xx / 150)) / 18) ** 2)
    field[..., 2] += river
    field += rng.normal(0, 0.06, size=field.shape).astype(np.float32)
    return (np.clip(field / field.max(), 0, 1) * 255).astype(np.uint8)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(3)
    rng = np.random.default_rng(3)
    model = LandCoverFCN().eval()
    stitcher = Stitcher()
    mean, std = torch.tensor(0.5 * 255), torch.tensor(0.25 * 255)
    positions = [(y, x) for y in range(0, SCENE - TILE + 1, STRIDE)
                 for x in range(0, SCENE - TILE + 1, STRIDE)]
    archive = [make_scene(rng) for _ in range(4)]  # the day's acquisitions
    stitcher.reset(SCENE, SCENE)
    summaries = []
    n_batches = 0
    t0 = time.perf_counter()
    print(f"{N_SCENES} scenes x {len(positions)} tiles; rss at loop start {rss_mb():.1f} MB",
          flush=True)
    for s in range(N_SCENES):
        scene = np.ascontiguousarray(np.rot90(archive[s % 4], k=(s // 4) % 4))
        stitcher.reset(SCENE, SCENE)
        for i in range(0, len(positions), BATCH):
            batch = TileBatch(POOL, scene, positions[i:i + BATCH], mean, std)
            with torch.inference_mode():
                probs = torch.softmax(model(batch.x), dim=1)
            stitcher.add(probs, batch.coords)
            del batch, probs
            n_batches += 1
        labels = stitcher.labels()
        frac = torch.bincount(labels.flatten(), minlength=N_CLASSES).float() / labels.numel()
        summaries.append(frac.tolist())
        if (s + 1) % 8 == 0:
            el = time.perf_counter() - t0
            print(f"  scene {s + 1:3d}  cover {' '.join(f'{f:.2f}' for f in frac.tolist())}  "
                  f"{el / n_batches * 1e3:.1f} ms/batch  staging buffers allocated "
                  f"{POOL.allocated}  rss {rss_mb():.1f} MB", flush=True)
    print(f"loop done; rss at loop end {rss_mb():.1f} MB", flush=True)
    print("mean cover fractions:", np.round(np.mean(summaries, 0), 3).tolist())


if __name__ == "__main__":
    main()
