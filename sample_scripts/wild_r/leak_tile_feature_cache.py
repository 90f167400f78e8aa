# expect: leak
# holder: cache._entries|TileCache._entries|self._entries
# pattern: NumPy-only water-segmentation pipeline over a synthetic multispectral map: a viewport pans (persistent heading, occasional turns) across a 2000x2000 tile grid, every step needs the 3x3 neighbourhood of preprocessed tiles (normalised bands, NDVI/NDWI, local-variance texture) and fits a per-pixel MLP with hand-written backprop and momentum SGD (no torch); tiles come from TileCache, an OrderedDict LRU with a byte budget, but put() does `self._nbytes =+ arr.nbytes` (assignment of +nbytes, not +=), so the byte count is always just the last tile's size, the `while self._nbytes > self.max_bytes` eviction never runs and every tile the walk ever discovered (~14 KB each, ~1 new tile/step) stays in self._entries
# step_ms: 3
"""Per-pixel water classifier trained on a streamed multispectral mosaic.

A viewport wanders over a very large synthetic raster (as an analyst panning
around a web map would) and each step trains on the tiles around it.
Tile preprocessing is the expensive part, so preprocessed tiles go through a
byte-budgeted LRU cache.
"""
import argparse
import hashlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger("tiles")

GRID = 2000
TILE = 24
BANDS = 4  # blue, green, red, nir
N_FEAT = 6


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    miss_ms: list = field(default_factory=list)

    @property
    def hit_rate(self):
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


class TileCache:
    """LRU of preprocessed tiles, bounded by total bytes rather than entry count."""

    def __init__(self, loader, max_bytes):
        self.loader = loader
        self.max_bytes = max_bytes
        self._entries = OrderedDict()
        self._nbytes = 0
        self.stats = CacheStats()

    def get(self, key):
        arr = self._entries.get(key)
        if arr is not None:
            self._entries.move_to_end(key)
            self.stats.hits += 1
            return arr
        t0 = time.perf_counter()
        arr = self.loader(key)
        self.stats.misses += 1
        if len(self.stats.miss_ms) < 2048:
            self.stats.miss_ms.append(1000 * (time.perf_counter() - t0))
        self.put(key, arr)
        return arr

    def put(self, key, arr):
        if key in self._entries:
            self._nbytes -= self._entries.pop(key).nbytes
        self._entries[key] = arr
        self._nbytes =+ arr.nbytes
        while self._nbytes > self.max_bytes and len(self._entries) > 1:
            _, old = self._entries.popitem(last=False)
            self._nbytes -= old.nbytes
            self.stats.evictions += 1

    def __len__(self):
        return len(self._entries)


def _tile_rng(tx, ty):
    h = hashlib.blake2b(f"{tx}:{ty}".encode(), digest_size=8).digest()
    return np.random.default_rng(int.from_bytes(h, "little"))


def _water_field(x, y):
    # smooth large-scale "lakes and rivers" field, deterministic in map coords
    return (np.sin(x / 37.0) * np.cos(y / 53.0) + 0.6 * np.sin((x + 2 * y) / 91.0)
            + 0.4 * np.cos((x - y) / 23.0))


def load_raw_tile(tx, ty):
    """Synthesise the raw uint16 reflectances of one tile (stands in for a COG read)."""
    rng = _tile_rng(tx, ty)
    yy, xx = np.mgrid[0:TILE, 0:TILE].astype(np.float32)
    w = _water_field(tx * TILE + xx, ty * TILE + yy) > 0.9
    base = np.array([900, 1100, 1200, 2600], dtype=np.float32)
    water = np.array([700, 800, 500, 300], dtype=np.float32)
    refl = np.where(w[None], water[:, None, None], base[:, None, None])
    refl = refl * rng.uniform(0.85, 1.15, size=(BANDS, 1, 1))
    refl += rng.normal(0, 260, size=(BANDS, TILE, TILE))
    clouds = rng.random() < 0.08
    if clouds:
        cy, cx = rng.integers(0, TILE, 2)
        r2 = (yy - cy) ** 2 + (xx - cx) ** 2
        refl += 3000 * np.exp(-r2 / 40.0)[None]
    return np.clip(refl, 0, 10000).astype(np.uint16), w


def _box_mean(a, k=3):
    pad = k // 2
    p = np.pad(a, pad, mode="edge")
    c = p.cumsum(0).cumsum(1)
    c = np.pad(c, ((1, 0), (1, 0)))
    s = c[k:, k:] - c[:-k, k:] - c[k:, :-k] + c[:-k, :-k]
    return s / (k * k)


def preprocess(key):
    tx, ty = key
    raw, _ = load_raw_tile(tx, ty)
    r = raw.astype(np.float32) / 10000.0
    blue, green, red, nir = r
    ndvi = (nir - red) / (nir + red + 1e-6)
    ndwi = (green - nir) / (green + nir + 1e-6)
    bright = r.mean(axis=0)
    texture = _box_mean(bright ** 2) - _box_mean(bright) ** 2
    feats = np.stack([blue, green, nir, ndvi, ndwi, np.sqrt(np.maximum(texture, 0))])
    # per-feature robust scaling with fixed, pre-computed constants
    loc = np.array([0.09, 0.1, 0.2, 0.2, -0.2, 0.01], dtype=np.float32)[:, None, None]
    scale = np.array([0.03, 0.03, 0.1, 0.4, 0.4, 0.02], dtype=np.float32)[:, None, None]
    return ((feats - loc) / scale).astype(np.float32)


def labels_for(key):
    return load_raw_tile(*key)[1]


class PixelMLP:
    """6 -> H -> 1 per-pixel classifier with hand-written backprop and momentum SGD."""

    def __init__(self, n_feat, hidden=128, lr=0.05, momentum=0.9, seed=0):
        r = np.random.default_rng(seed)
        self.params = {
            "W1": r.normal(0, 1 / np.sqrt(n_feat), (n_feat, hidden)),
            "b1": np.zeros(hidden),
            "W2": r.normal(0, 1 / np.sqrt(hidden), (hidden, 1)),
            "b2": np.zeros(1),
        }
        self.vel = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.lr, self.mom = lr, momentum

    def forward(self, X):
        P = self.params
        h = np.maximum(X @ P["W1"] + P["b1"], 0.0)
        return h, (h @ P["W2"] + P["b2"])[:, 0]

    def step(self, X, y):
        P = self.params
        h, z = self.forward(X)
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))
        dz = ((p - y) / len(y))[:, None]
        dh = (dz @ P["W2"].T) * (h > 0)
        grads = {"W2": h.T @ dz, "b2": dz.sum(0), "W1": X.T @ dh, "b1": dh.sum(0)}
        for k, g in grads.items():
            self.vel[k] = self.mom * self.vel[k] - self.lr * g
            P[k] += self.vel[k]
        eps = 1e-7
        return float(-np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)))

    def accuracy(self, X, y):
        return float(((self.forward(X)[1] > 0) == (y > 0.5)).mean())


def neighbourhood(cx, cy):
    return [(cx + dx, cy + dy) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--cache-mb", type=float, default=24.0)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--pan-prob", type=float, default=0.35)
    ap.add_argument("--pixels", type=int, default=4096)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="[%(name)s] %(message)s")

    rng = np.random.default_rng(args.seed)
    cache = TileCache(preprocess, max_bytes=int(args.cache_mb * 2 ** 20))
    label_cache = {}
    model = PixelMLP(N_FEAT)
    cx, cy = GRID // 2, GRID // 2
    moves = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]])
    heading = 0
    ema = None
    t0 = time.perf_counter()

    for step in range(1, args.steps + 1):
        # panning: keep the current heading, turn left/right now and then
        if rng.random() < 0.06:
            heading = (heading + rng.choice([-1, 1])) % 4
        if rng.random() < args.pan_prob:
            dx, dy = moves[heading]
            if not (1 <= cx + dx <= GRID - 2 and 1 <= cy + dy <= GRID - 2):
                heading = (heading + 2) % 4
                dx, dy = moves[heading]
            cx, cy = cx + int(dx), cy + int(dy)
        keys = neighbourhood(cx, cy)
        X = np.concatenate([cache.get(k).reshape(N_FEAT, -1).T for k in keys])
        ys = []
        for k in keys:
            if k not in label_cache:
                if len(label_cache) > 512:
                    label_cache.pop(next(iter(label_cache)))
                label_cache[k] = labels_for(k).ravel().astype(np.float64)
            ys.append(label_cache[k])
        y = np.concatenate(ys)
        sub = rng.choice(len(y), size=args.pixels, replace=False)
        loss = model.step(X[sub].astype(np.float64), y[sub])
        ema = loss if ema is None else 0.98 * ema + 0.02 * loss

        if step % 600 == 0:
            acc = model.accuracy(X.astype(np.float64), y)
            log.info("step %5d  loss %.4f  acc %.3f  viewport (%d,%d)  cache %d tiles  hit %.2f  evict %d  %.2f ms/step",
                     step, ema, acc, cx, cy, len(cache), cache.stats.hit_rate,
                     cache.stats.evictions, 1000 * (time.perf_counter() - t0) / step)

    miss = np.array(cache.stats.miss_ms)
    log.info("done: %d steps, tile preprocess p50 %.2f ms p95 %.2f ms, hit rate %.3f",
             args.steps, np.percentile(miss, 50), np.percentile(miss, 95), cache.stats.hit_rate)


if __name__ == "__main__":
    main()
