# expect: leak
# holder: best_cost|_memo|__defaults__
# pattern: recursive quadtree rate-distortion search memoizes subproblem costs in a mutable default-argument dict keyed by (frame, x, y, size); keys never repeat across frames, so it grows a few KiB per frame
# step_ms: 9
"""Reaction-diffusion simulation streamed through a quadtree encoder.

Every frame of a Gray-Scott simulation is compressed with a quadtree: a block
is either sent as its mean value or split into four children, choosing the
split that minimises ``squared error + lam * n_blocks``.  ``best_cost`` solves
that recursively; because ``encode`` asks for the same sub-block costs again on
its way down, ``best_cost`` memoizes its results in a default-argument dict.

Why it leaks: the default ``_memo={}`` is created once, when the function is
defined, and lives as long as the function.  Its keys include the frame
number, so entries from previous frames are never reused and never removed --
a slow leak of a few KiB per frame.

Fix: pass a fresh ``memo`` dict per frame (``encode(..., memo={})``) or use
``functools.lru_cache`` with a ``maxsize`` and clear it between frames.
"""
import time

import numpy as np

N = 128
MIN_BLOCK = 16
N_FRAMES = 2000
SUBSTEPS = 26
LAM = 0.02


def laplacian(Z):
    return (np.roll(Z, 1, 0) + np.roll(Z, -1, 0) + np.roll(Z, 1, 1) + np.roll(Z, -1, 1) - 4 * Z)


class GrayScott:
    def __init__(self, n, feed=0.037, kill=0.06, seed=0):
        rng = np.random.default_rng(seed)
        self.U = np.ones((n, n))
        self.V = np.zeros((n, n))
        for _ in range(6):
            cx, cy = rng.integers(10, n - 10, size=2)
            self.U[cy - 4:cy + 4, cx - 4:cx + 4] = 0.5
            self.V[cy - 4:cy + 4, cx - 4:cx + 4] = 0.25
        self.V += 0.01 * rng.random((n, n))
        self.feed, self.kill = feed, kill

    def step(self, substeps, Du=0.16, Dv=0.08):
        U, V = self.U, self.V
        for _ in range(substeps):
            uvv = U * V * V
            U += Du * laplacian(U) - uvv + self.feed * (1 - U)
            V += Dv * laplacian(V) + uvv - (self.feed + self.kill) * V
        return V


def leaf_cost(field, x, y, size, lam):
    blk = field[y:y + size, x:x + size]
    return float(blk.var()) * size * size + lam


def best_cost(field, x, y, size, frame, lam, _memo={}):
    if size <= MIN_BLOCK:  # smallest blocks are cheap, no need to cache them
        return leaf_cost(field, x, y, size, lam), True
    key = (frame, x, y, size)
    if key in _memo:
        return _memo[key]
    as_leaf = leaf_cost(field, x, y, size, lam)
    h = size // 2
    split = sum(best_cost(field, x + dx, y + dy, h, frame, lam)[0] for dy in (0, h) for dx in (0, h))
    result = (as_leaf, True) if as_leaf <= split else (split, False)
    _memo[key] = result
    return result


def encode(field, x, y, size, frame, lam, out):
    _, is_leaf = best_cost(field, x, y, size, frame, lam)
    if is_leaf:
        out.append((x, y, size, float(field[y:y + size, x:x + size].mean())))
        return
    h = size // 2
    for dy in (0, h):
        for dx in (0, h):
            encode(field, x + dx, y + dy, h, frame, lam, out)


def decode(blocks, n):
    img = np.empty((n, n))
    for x, y, size, mean in blocks:
        img[y:y + size, x:x + size] = mean
    return img


def main():
    sim = GrayScott(N)
    total_blocks = 0
    t0 = time.time()
    for frame in range(N_FRAMES):
        V = sim.step(SUBSTEPS)
        blocks = []
        encode(V, 0, 0, N, frame, LAM, blocks)
        total_blocks += len(blocks)
        if (frame + 1) % 400 == 0:
            err = float(np.abs(decode(blocks, N) - V).mean())
            print(f"[{time.time() - t0:5.1f}s] frame {frame + 1:5d}  blocks/frame={total_blocks / (frame + 1):.1f}  "
                  f"mean abs err={err:.4f}")


if __name__ == "__main__":
    main()
