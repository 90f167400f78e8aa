# expect: no_leak
# pattern: satellite-tile feature ETL on a concurrent.futures.ProcessPoolExecutor with 2 worker processes (NumPy + multiprocessing.shared_memory, no torch; one step = one tile: the parent cuts a 4-band uint16 tile out of the current sensor's granule into a shared-memory slab, a worker computes calibrated reflectance, NDVI/NDWI, a cloud mask and Sobel texture at half resolution into an output slab, the parent reduces it to per-tile statistics, ~15 ms per tile for the small tiles and ~70 ms for the large ones, code in main() + a SlabPool class + module-level worker functions); tiles move through a SlabPool of SharedMemory segments in power-of-two size classes that only creates a new segment when every slab of that class is in flight, and the workers cache their attachments by segment name; with at most 4 tiles in flight the pool grows to ~8 slabs of the 2 MB class during warm-up and then only recycles them; after 35% of the run a second, higher-resolution sensor (1024x1024 tiles) starts and the 8 MB class fills the same way, so parent RSS (the shared pages it touches) and the workers' RSS step up twice and then stay flat until the pool is unlinked at exit
# step_ms: 60
"""Tile feature ETL with shared-memory hand-off to worker processes.

The parent produces raw tiles (here: synthesised), hands them to a process
pool through recycled shared-memory slabs (no pickling of pixel data), and
collects per-tile statistics for the catalogue.
"""

import time
from collections import defaultdict, deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import shared_memory

import numpy as np

N_TILES = 340
SWITCH_AT = int(N_TILES * 0.35)
MAX_IN_FLIGHT = 4
N_FEAT = 6
GAIN = np.array([2.0e-5, 2.1e-5, 1.9e-5, 2.4e-5], dtype=np.float32)
OFFSET = np.array([-0.1, -0.1, -0.1, -0.1], dtype=np.float32)


class SlabPool:
    """Shared-memory segments recycled in power-of-two size classes."""

    def __init__(self, min_size=1 << 20):
        self.min_size = min_size
        self._free = defaultdict(list)
        self._owned = {}
        self.created = 0

    def _class(self, nbytes):
        size = self.min_size
        while size < nbytes:
            size <<= 1
        return size

    def acquire(self, nbytes):
        cls = self._class(nbytes)
        free = self._free[cls]
        if free:
            return free.pop()
        shm = shared_memory.SharedMemory(create=True, size=cls)
        self._owned[shm.name] = shm
        self.created += 1
        return shm

    def release(self, shm):
        self._free[self._class(shm.size)].append(shm)

    def nbytes(self):
        return sum(s.size for s in self._owned.values())

    def close(self):
        for shm in self._owned.values():
            shm.close()
            shm.unlink()
        self._owned.clear()
        self._free.clear()


# ---------------------------------------------------------------- worker side
_attached = {}


def _attach(name):
    shm = _attached.get(name)
    if shm is None:
        # forked workers share the parent's resource tracker, which already
        # knows the segment; the parent closes and unlinks it at the end
        shm = shared_memory.SharedMemory(name=name)
        _attached[name] = shm
    return shm


def sobel_mag(a):
    p = np.pad(a, 1, mode="edge")
    gx = (p[:-2, 2:] + 2 * p[1:-1, 2:] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[1:-1, :-2] + p[2:, :-2])
    gy = (p[2:, :-2] + 2 * p[2:, 1:-1] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[:-2, 1:-1] + p[:-2, 2:])
    return np.hypot(gx, gy)


def process_tile(in_name, shape, out_name):
    h, w, b = shape
    raw = np.ndarray(shape, dtype=np.uint16, buffer=_attach(in_name).buf)
    out = np.ndarray((h // 2, w // 2, N_FEAT), dtype=np.float32, buffer=_attach(out_name).buf)
    refl = raw.astype(np.float32) * GAIN + OFFSET
    blue, green, red, nir = (refl[..., i] for i in range(4))
    ndvi = (nir - red) / np.maximum(nir + red, 1e-4)
    ndwi = (green - nir) / np.maximum(green + nir, 1e-4)
    bright = refl.mean(axis=-1)
    cloud = ((bright > 0.35) & (blue > 0.3)).astype(np.float32)
    texture = sobel_mag(nir)

    def down(a):
        return a.reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
    for i, f in enumerate((ndvi, ndwi, bright, cloud, texture, nir)):
        out[..., i] = down(f)
    del raw, out
    return float(cloud.mean())


# ---------------------------------------------------------------- parent side
def synth_granule(rng, size):
    """A whole acquisition: fields, water bodies and clouds in 4 bands
    (B, G, R, NIR) as uint16 DN, built once per sensor like a decoded granule."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size * 8
    fields = (np.sin(xx * 6.283 * 1.7) * np.sin(yy * 6.283 * 2.3) > 0).astype(np.float32)
    lakes = np.sin(xx * 1.3 + 2) * np.cos(yy * 1.1) > 0.85
    cloud = np.clip(np.sin(xx * 2.1) * np.cos(yy * 1.7 + 1) * 2 - 1.2, 0, 1)
    out = np.empty((size, size, 4), dtype=np.uint16)
    for i, (base, k_f) in enumerate(((0.05, 0.0), (0.08, 0.02), (0.09, -0.03), (0.15, 0.35))):
        band = base + k_f * fields
        band[lakes] = (0.06, 0.07, 0.04, 0.02)[i]
        band += cloud * 0.6 + rng.normal(0, 0.004, size=band.shape).astype(np.float32)
        out[..., i] = ((band - OFFSET[i]) / GAIN[i]).clip(0, 65535)
    return out


def main():
    rng = np.random.default_rng(77)
    pool = SlabPool()
    catalogue = []
    in_flight = {}
    pending_sizes = deque([512] * SWITCH_AT + [1024] * (N_TILES - SWITCH_AT))
    granules = {512: synth_granule(rng, 2048)}
    t0 = last = time.perf_counter()
    done = 0
    try:
        with ProcessPoolExecutor(max_workers=2) as ex:
            while pending_sizes or in_flight:
                while pending_sizes and len(in_flight) < MAX_IN_FLIGHT:
                    size = pending_sizes.popleft()
                    if size not in granules:     # the high-resolution sensor comes online
                        granules = {size: synth_granule(rng, 2 * size)}
                    g = granules[size]
                    y, x = rng.integers(0, g.shape[0] - size, size=2)
                    tile = g[y:y + size, x:x + size]
                    src = pool.acquire(tile.nbytes)
                    np.ndarray(tile.shape, dtype=tile.dtype, buffer=src.buf)[...] = tile
                    dst = pool.acquire((size // 2) * (size // 2) * N_FEAT * 4)
                    fut = ex.submit(process_tile, src.name, tile.shape, dst.name)
                    in_flight[fut] = (src, dst, size)
                finished, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
                for fut in finished:
                    src, dst, size = in_flight.pop(fut)
                    cloud_frac = fut.result()
                    feats = np.ndarray((size // 2, size // 2, N_FEAT), dtype=np.float32, buffer=dst.buf)
                    clear = feats[..., 3] < 0.5
                    ndvi = float(feats[..., 0][clear].mean()) if clear.any() else float("nan")
                    catalogue.append((done, size, cloud_frac, ndvi, float(feats[..., 4].mean())))
                    del feats, clear
                    pool.release(src)
                    pool.release(dst)
                    done += 1
                now = time.perf_counter()
                if now - last >= 1.0:
                    last = now
                    print(f"tiles {done:3d}/{N_TILES} size={size} slabs={pool.created} "
                          f"pool={pool.nbytes() >> 20} MB last_ndvi={catalogue[-1][3]:.3f}", flush=True)
    finally:
        pool.close()
    print(f"done: {len(catalogue)} tiles in {time.perf_counter() - t0:.1f}s, "
          f"mean cloud {np.mean([c[2] for c in catalogue]):.2f}")


if __name__ == "__main__":
    main()
