# expect: no_leak
# pattern: Monte-Carlo k-eigenvalue (criticality) calculation for a 2-D, two-group, pin-lattice reactor core with a water reflector (NumPy only, no torch; one step = one fission generation of 30k neutrons tracked with vectorised Woodcock delta tracking until every history has leaked or been absorbed, ~190 ms per generation, code in main() + a Core geometry class + a Tallies class + transport functions); the fission bank is rebuilt every generation (sites collected per collision round, concatenated, then resampled to the source size), and the collision-estimator scores of a generation are buffered as (mesh-bin, score) chunk lists and folded into the mesh with one np.bincount at the end of the generation, so during active cycles memory saw-tooths by ~25-35 MB within every generation and drops back at its end; after 25 inactive generations (source convergence, Shannon entropy only, no tallies) the active cycles start and the Tallies object allocates its 600x600 two-group flux and fission-rate meshes with sum and sum-of-squares accumulators (~23 MB) once; so RSS is flat for the first quarter, steps up by ~55 MB when the active cycles begin, and then only saw-tooths around a flat level
# step_ms: 190
"""Monte-Carlo criticality of a small 2-D two-group core.

Classic power iteration: each generation's neutrons are born at the previous
generation's fission sites; k_eff is the ratio of successive population sizes.
Inactive generations let the fission source converge (checked with the
Shannon entropy of the source); active generations accumulate mesh tallies
with batch statistics.
"""

import time

import numpy as np

N_SOURCE = 30000
N_INACTIVE = 25
N_ACTIVE = 70
MESH = 600

# macroscopic cross sections [material, group], 1/cm; material 0 fuel, 1 moderator, 2 reflector
SIG_T = np.array([[0.25, 0.60], [0.60, 2.00], [0.55, 1.90]])
SIG_A = np.array([[0.012, 0.12], [0.0005, 0.02], [0.0004, 0.018]])
NU_SIG_F = np.array([[0.009, 0.20], [0.0, 0.0], [0.0, 0.0]])
SIG_S01 = np.array([0.038, 0.0495, 0.045])          # down-scatter fast -> thermal
SIG_MAJ = SIG_T.max(axis=0)


class Core:
    half = 60.0        # problem boundary (vacuum outside), cm
    core_half = 40.0   # fuelled region
    pitch = 1.6
    r_pin = 0.55

    def material(self, x, y):
        m = np.full(x.shape, 2, dtype=np.int64)
        in_core = (np.abs(x) < self.core_half) & (np.abs(y) < self.core_half)
        px = x - self.pitch * np.round(x / self.pitch)
        py = y - self.pitch * np.round(y / self.pitch)
        # a few water holes (guide tubes) in a 9x9 assembly pattern
        ix = np.round(x / self.pitch).astype(np.int64) % 9
        iy = np.round(y / self.pitch).astype(np.int64) % 9
        guide = ((ix == 2) | (ix == 6)) & ((iy == 2) | (iy == 6))
        fuel = in_core & (px * px + py * py < self.r_pin ** 2) & ~guide
        m[in_core] = 1
        m[fuel] = 0
        return m

    def inside(self, x, y):
        return (np.abs(x) < self.half) & (np.abs(y) < self.half)


class Tallies:
    def __init__(self, core, n=MESH):
        self.core = core
        self.n = n
        shape = (2, 2, n, n)                       # (flux|fission, group, y, x)
        self.sum = np.zeros(shape)
        self.sum2 = np.zeros(shape)
        self.batches = 0

    def bin(self, x, y):
        h = 2 * self.core.half / self.n
        ix = np.clip(((x + self.core.half) / h).astype(np.int64), 0, self.n - 1)
        iy = np.clip(((y + self.core.half) / h).astype(np.int64), 0, self.n - 1)
        return iy * self.n + ix

    def add_batch(self, flux_bins, flux_scores, fis_bins, fis_scores, norm):
        size = 2 * self.n * self.n
        flux = np.bincount(flux_bins, flux_scores, minlength=size).reshape(2, self.n, self.n) / norm
        fis = np.bincount(fis_bins, fis_scores, minlength=size).reshape(2, self.n, self.n) / norm
        batch = np.stack([flux, fis])
        self.sum += batch
        self.sum2 += batch * batch
        self.batches += 1

    def rel_err(self):
        m = self.sum / self.batches
        var = np.maximum(self.sum2 / self.batches - m * m, 0) / max(1, self.batches - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.sqrt(var) / m
        return float(np.nanmedian(r[0, 1][m[0, 1] > 0]))


def isotropic(n, rng):
    phi = rng.uniform(0, 2 * np.pi, n)
    return np.cos(phi), np.sin(phi)


def run_generation(core, src_x, src_y, k_prev, rng, tallies):
    n = src_x.size
    x, y = src_x.copy(), src_y.copy()
    ux, uy = isotropic(n, rng)
    g = np.zeros(n, dtype=np.int64)
    sites_x, sites_y = [], []
    flux_bins, flux_scores, fis_bins, fis_scores = [], [], [], []
    collisions = leaked = 0
    while x.size:
        d = -np.log(rng.random(x.size)) / SIG_MAJ[g]
        x += d * ux
        y += d * uy
        alive = core.inside(x, y)
        leaked += int((~alive).sum())
        x, y, ux, uy, g = x[alive], y[alive], ux[alive], uy[alive], g[alive]
        if not x.size:
            break
        m = core.material(x, y)
        sig_t = SIG_T[m, g]
        real = rng.random(x.size) < sig_t / SIG_MAJ[g]
        ri = np.flatnonzero(real)
        collisions += ri.size
        xr, yr, mr, gr, st = x[ri], y[ri], m[ri], g[ri], sig_t[ri]
        if tallies is not None:   # buffer the scores, fold them in once per generation
            b = gr * tallies.n * tallies.n + tallies.bin(xr, yr)
            flux_bins.append(b)
            flux_scores.append(1.0 / st)
            fis_bins.append(b)
            fis_scores.append(NU_SIG_F[mr, gr] / st)
        # fission sites (expected number per collision, like MCNP's nu*sigf/sigt)
        nsite = np.floor(NU_SIG_F[mr, gr] / st / k_prev + rng.random(ri.size)).astype(np.int64)
        if nsite.any():
            sites_x.append(np.repeat(xr, nsite))
            sites_y.append(np.repeat(yr, nsite))
        absorbed = rng.random(ri.size) < SIG_A[mr, gr] / st
        down = (gr == 0) & ~absorbed & (rng.random(ri.size) < SIG_S01[mr] / (st - SIG_A[mr, gr]))
        g[ri[down]] = 1
        sc = ri[~absorbed]
        ux[sc], uy[sc] = isotropic(sc.size, rng)
        keep = np.ones(x.size, dtype=bool)
        keep[ri[absorbed]] = False
        x, y, ux, uy, g = x[keep], y[keep], ux[keep], uy[keep], g[keep]
    bank_x = np.concatenate(sites_x) if sites_x else np.zeros(0)
    bank_y = np.concatenate(sites_y) if sites_y else np.zeros(0)
    scores = None
    if tallies is not None:
        scores = (np.concatenate(flux_bins), np.concatenate(flux_scores),
                  np.concatenate(fis_bins), np.concatenate(fis_scores))
    return bank_x, bank_y, collisions, leaked, scores


def shannon_entropy(x, y, half, n=16):
    h, _, _ = np.histogram2d(x, y, bins=n, range=[[-half, half], [-half, half]])
    p = h.ravel() / max(1, x.size)
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def main():
    rng = np.random.default_rng(1234)
    core = Core()
    src_x = rng.uniform(-core.core_half, core.core_half, N_SOURCE)
    src_y = rng.uniform(-core.core_half, core.core_half, N_SOURCE)
    k = 1.0
    k_active = []
    tallies = None
    t0 = last = time.perf_counter()
    for gen in range(N_INACTIVE + N_ACTIVE):
        active = gen >= N_INACTIVE
        if active and tallies is None:
            tallies = Tallies(core)
        bank_x, bank_y, coll, leaked, scores = run_generation(
            core, src_x, src_y, k, rng, tallies if active else None)
        k = bank_x.size / src_x.size * k
        if active:
            k_active.append(k)
            tallies.add_batch(*scores, norm=src_x.size)
        del scores
        # population control: resample the bank back to the nominal source size
        idx = rng.integers(0, bank_x.size, N_SOURCE)
        src_x, src_y = bank_x[idx], bank_y[idx]
        now = time.perf_counter()
        if now - last >= 1.0:
            last = now
            h = shannon_entropy(src_x, src_y, core.half)
            extra = (f" k_avg={np.mean(k_active):.4f}+-{np.std(k_active) / max(1, len(k_active) - 1) ** 0.5:.4f}"
                     f" flux_rel_err={tallies.rel_err():.3f}") if k_active else ""
            print(f"gen {gen:3d} {'active  ' if active else 'inactive'} k={k:.4f} H={h:.3f} "
                  f"collisions={coll} leaked={leaked}{extra}", flush=True)
    print(f"done: k_eff = {np.mean(k_active):.4f} over {len(k_active)} active generations, "
          f"{time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
