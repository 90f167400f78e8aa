# expect: leak
# holder: _registry|_finalizer
# pattern: every request's StagingBuffer registers weakref.finalize(self, self._release); the bound method holds a strong reference to the buffer, so weakref.finalize's module-level registry keeps every staging buffer (and its tile array) alive until interpreter exit
# step_ms: 4
"""Tile inference worker for the satellite cloud-mask model.

Each request carries a handful of 4-band uint16 tiles.  They are normalised
into a contiguous float32 staging buffer, run through a small fully
convolutional network in inference mode, and per-request cloud statistics are
returned.  A BufferManager keeps simple accounting of staging memory.
"""
import time
import weakref

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(5)

N_REQUESTS = 3000
TILES_PER_REQUEST = 4
BANDS = 4
TILE = 48
SEED = 5
BAND_MEAN = np.array([820.0, 760.0, 640.0, 2100.0], np.float32)[:, None, None]
BAND_STD = np.array([310.0, 290.0, 270.0, 650.0], np.float32)[:, None, None]


class BufferManager:
    def __init__(self):
        self.live_bytes = 0
        self.allocated = 0
        self.released = 0

    def on_alloc(self, nbytes):
        self.live_bytes += nbytes
        self.allocated += 1

    def on_release(self, nbytes):
        self.live_bytes -= nbytes
        self.released += 1


class StagingBuffer:
    def __init__(self, manager, tiles_u16):
        self.manager = manager
        self.array = np.empty(tiles_u16.shape, np.float32)
        np.subtract(tiles_u16, BAND_MEAN, out=self.array)
        self.array /= BAND_STD
        self.nbytes = self.array.nbytes
        manager.on_alloc(self.nbytes)
        self._finalizer = weakref.finalize(self, self._release)

    def _release(self):
        self.manager.on_release(self.nbytes)

    def tensor(self):
        return torch.from_numpy(self.array)


class CloudNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(BANDS, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 1, 1),
        )

    def forward(self, x):
        return torch.sigmoid(self.body(x))


def make_request(rng):
    base = rng.normal(BAND_MEAN, BAND_STD, size=(TILES_PER_REQUEST, BANDS, TILE, TILE))
    cloud = rng.random((TILES_PER_REQUEST, 1, TILE, TILE)) < rng.uniform(0.0, 0.6)
    base = base + cloud * 1500.0
    return np.clip(base, 0, 65535).astype(np.uint16), cloud


def calibrate(model, rng, steps=40):
    """Quick start-up fit on labelled synthetic tiles (stands in for loading weights)."""
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        tiles, cloud = make_request(rng)
        x = torch.from_numpy(((tiles - BAND_MEAN) / BAND_STD).astype(np.float32))
        target = torch.from_numpy(cloud.astype(np.float32))
        loss = nn.functional.binary_cross_entropy(model(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


def handle(model, manager, tiles):
    buf = StagingBuffer(manager, tiles)
    with torch.inference_mode():
        mask = model(buf.tensor())
    frac = mask.mean(dim=(1, 2, 3))
    return {
        "cloud_fraction": frac.tolist(),
        "usable": int((frac < 0.3).sum()),
    }


def main():
    rng = np.random.default_rng(SEED)
    model = CloudNet()
    fit_loss = calibrate(model, rng)
    model.eval()
    print(f"calibrated cloud model, bce {fit_loss:.4f}", flush=True)
    manager = BufferManager()

    usable = 0
    fractions = []
    start = last = time.perf_counter()
    for r in range(N_REQUESTS):
        tiles, _ = make_request(rng)
        result = handle(model, manager, tiles)
        usable += result["usable"]
        fractions.extend(result["cloud_fraction"])
        fractions = fractions[-2000:]

        now = time.perf_counter()
        if now - last >= 1.0:
            rate = (r + 1) / (now - start)
            print(
                f"[{now - start:5.1f}s] request {r + 1}/{N_REQUESTS} "
                f"{rate:.1f} req/s usable_tiles={usable} "
                f"mean_cloud={np.mean(fractions):.3f} buffers={manager.allocated}",
                flush=True,
            )
            last = now

    print(f"done: {N_REQUESTS} requests, {usable} usable tiles, "
          f"{time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()
