# expect: no_leak
# pattern: block-structured adaptive mesh refinement (Berger-Oliger style, two levels) for the 2-D scalar wave equation in a finely layered medium with a fault (NumPy + scipy.ndimage, no torch; one step = one coarse leapfrog step of the 128x128 grid plus 10 fine sub-steps on every refined 16x16-cell block, ~60 ms per step, code in main() + an AmrGrid class holding the refined blocks in a dict keyed by block index + a FineBlock class); five explosive sources are fired over the run, blocks are refined x10 (u, u_old, fine c^2, peak amplitude, arrival time and energy maps, ~1.3 MB per block) wherever the coarse wave front is steep and are restricted back onto the coarse grid and deleted once the front has passed or weakened below the refinement threshold; memory follows the physics: it climbs by ~30 MB while the first rings expand (more blocks along a longer front), then hovers and dips as blocks are dropped and recreated (glibc reuses the freed block memory rather than returning it), bounded by the 64 blocks of the domain
# step_ms: 60
"""Two-level AMR for seismic-style wave propagation.

Coarse 128x128 leapfrog everywhere; 16x16-cell blocks where the wave front is
steep get a 10x finer grid that resolves the fine layering of the medium, with
ghost cells interpolated from the coarse solution in space and time, and the
fine solution restricted back onto the coarse grid after each coarse step.
"""

import time

import numpy as np
from scipy import ndimage

N = 128
BS = 16          # coarse cells per block side
R = 10           # refinement ratio
NB = N // BS
DT = 0.5
N_STEPS = 285
REFINE_GRAD = 0.08
SOURCES = [(0, (40, 50)), (55, (90, 80)), (110, (60, 30)), (150, (85, 100)), (205, (45, 95))]

rng = np.random.default_rng(8)


def medium(y, x):
    """Wave speed squared: smooth background + fine layering + a fault."""
    layers = 0.1 * np.sin(y * 2.7) * np.sin(x * 0.9 + y * 0.4)
    fault = 0.1 * (x + 0.3 * y > 110)
    return (1.15 + layers + fault) ** 2


def laplacian(a, h):
    return (a[2:, 1:-1] + a[:-2, 1:-1] + a[1:-1, 2:] + a[1:-1, :-2] - 4 * a[1:-1, 1:-1]) / (h * h)


class FineBlock:
    def __init__(self, bi, bj, coarse_u, coarse_u_old):
        self.bi, self.bj = bi, bj
        n = BS * R + 2
        h = 1.0 / R
        coords = (np.arange(n) - 1 + 0.5) * h - 0.5
        yy, xx = np.meshgrid(bi * BS + coords, bj * BS + coords, indexing="ij")
        self.c2 = medium(yy, xx)
        self.u = self.prolong(coarse_u)
        # fine leapfrog needs the level one *fine* step back: interpolate in time
        self.u_old = self.prolong(coarse_u - (coarse_u - coarse_u_old) / R)
        self.peak = np.abs(self.u)
        self.arrival = np.where(self.peak > 0.02, 0.0, np.inf)
        self.energy = np.zeros_like(self.u)

    def halo(self, coarse):
        y0, x0 = self.bi * BS, self.bj * BS
        p = np.pad(coarse, 1, mode="edge")
        return p[y0:y0 + BS + 2, x0:x0 + BS + 2]

    def prolong(self, coarse):
        patch = self.halo(coarse)
        # fine cell centres in halo-patch coordinates
        n = BS * R + 2
        c = (np.arange(n) - 1 + 0.5) / R - 0.5 + 1.0
        yy, xx = np.meshgrid(c, c, indexing="ij")
        return ndimage.map_coordinates(patch, [yy, xx], order=1, mode="nearest")

    def advance(self, coarse_t0, coarse_t1, t):
        g0 = self.prolong(coarse_t0)
        g1 = self.prolong(coarse_t1)
        h = 1.0 / R
        dtf = DT / R
        u, u_old = self.u, self.u_old
        for k in range(R):
            theta = (k + 1) / R
            u_new = np.empty_like(u)
            u_new[1:-1, 1:-1] = (2 * u[1:-1, 1:-1] - u_old[1:-1, 1:-1]
                                 + dtf * dtf * self.c2[1:-1, 1:-1] * laplacian(u, h))
            ghost = (1 - theta) * g0 + theta * g1
            u_new[0, :], u_new[-1, :] = ghost[0, :], ghost[-1, :]
            u_new[:, 0], u_new[:, -1] = ghost[:, 0], ghost[:, -1]
            u_old, u = u, u_new
        self.u, self.u_old = u, u_old
        amp = np.abs(u)
        np.maximum(self.peak, amp, out=self.peak)
        np.minimum(self.arrival, np.where(amp > 0.02, t, np.inf), out=self.arrival)
        self.energy += (u - u_old) ** 2 / dtf

    def restrict(self, a):
        core = a[1:-1, 1:-1]
        return core.reshape(BS, R, BS, R).mean(axis=(1, 3))


class AmrGrid:
    def __init__(self):
        yy, xx = np.meshgrid(np.arange(N) + 0.5, np.arange(N) + 0.5, indexing="ij")
        fine_avg = np.zeros((N, N))
        for dy in np.linspace(-0.4, 0.4, 4):
            for dx in np.linspace(-0.4, 0.4, 4):
                fine_avg += medium(yy + dy, xx + dx)
        self.c2 = fine_avg / 16
        self.u = np.zeros((N, N))
        self.u_old = np.zeros((N, N))
        self.peak = np.zeros((N, N))
        edge = np.minimum.reduce([yy, N - yy, xx, N - xx])
        self.sponge = np.clip(1 - edge / 14.0, 0, 1) ** 2 * 0.15
        self.t = 0.0
        self.blocks = {}   # (bi, bj) -> FineBlock
        self.created = self.dropped = 0

    def fire(self, centre, amp=1.0, width=2.5):
        yy, xx = np.meshgrid(np.arange(N), np.arange(N), indexing="ij")
        r2 = (yy - centre[0]) ** 2 + (xx - centre[1]) ** 2
        pulse = amp * np.exp(-r2 / (2 * width ** 2))
        self.u += pulse
        self.u_old += pulse

    def regrid(self):
        gy, gx = np.gradient(self.u)
        g = np.hypot(gy, gx).reshape(NB, BS, NB, BS).max(axis=(1, 3))
        g = ndimage.maximum_filter(g, size=3)   # one block of buffer around the front
        want = {(int(i), int(j)) for i, j in zip(*np.nonzero(g > REFINE_GRAD))}
        for key in list(self.blocks):
            if key not in want:
                blk = self.blocks.pop(key)
                self.merge(blk)
                self.dropped += 1
        for key in want - self.blocks.keys():
            self.blocks[key] = FineBlock(*key, self.u, self.u_old)
            self.created += 1

    def merge(self, blk):
        y0, x0 = blk.bi * BS, blk.bj * BS
        sl = (slice(y0, y0 + BS), slice(x0, x0 + BS))
        self.u[sl] = blk.restrict(blk.u)
        pk = blk.peak[1:-1, 1:-1].reshape(BS, R, BS, R).max(axis=(1, 3))
        np.maximum(self.peak[sl], pk, out=self.peak[sl])

    def step(self):
        p = np.pad(self.u, 1, mode="edge")
        u_new = 2 * self.u - self.u_old + DT * DT * self.c2 * laplacian(p, 1.0)
        u_new *= 1 - self.sponge
        u_t0 = self.u
        self.u_old, self.u = self.u * (1 - self.sponge), u_new
        self.t += DT
        for blk in self.blocks.values():
            blk.advance(u_t0, self.u, self.t)
            y0, x0 = blk.bi * BS, blk.bj * BS
            sl = (slice(y0, y0 + BS), slice(x0, x0 + BS))
            self.u[sl] = blk.restrict(blk.u)   # u_old there already holds the restricted t level
        np.maximum(self.peak, np.abs(self.u), out=self.peak)


def main():
    grid = AmrGrid()
    pending = list(SOURCES)
    t0 = last = time.perf_counter()
    max_blocks = 0
    for step in range(N_STEPS):
        while pending and pending[0][0] == step:
            _, centre = pending.pop(0)
            grid.fire(centre, amp=float(rng.uniform(1.4, 1.8)))
        if step % 2 == 0:
            grid.regrid()
        grid.step()
        max_blocks = max(max_blocks, len(grid.blocks))
        now = time.perf_counter()
        if now - last >= 1.0:
            last = now
            energy = float((grid.u ** 2).sum())
            print(f"step {step:3d} blocks={len(grid.blocks):2d} created={grid.created} "
                  f"dropped={grid.dropped} energy={energy:8.2f} peak={grid.peak.max():.3f}", flush=True)
    print(f"done: {N_STEPS} steps, max {max_blocks} refined blocks, {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
