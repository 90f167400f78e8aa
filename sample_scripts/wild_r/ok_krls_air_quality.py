# expect: no_leak
# pattern: NumPy-only online air-quality mapping with kernel recursive least squares (Engel et al. KRLS with the approximate-linear-dependence test, no torch): crowd-sourced NO2/PM readings arrive at random positions inside a service area whose radius grows as districts are onboarded over the first 30% of the stream; a reading enters the dictionary only if the kernel at its position is not well represented by the existing centres, so the dictionary and its two m x m float64 matrices (K^-1 and P, grown in 128-row capacity chunks) climb quadratically while new districts are covered and stop growing once the area is covered (~60% of the steps, ~35-40% of the wall time; max_dict=1536 is the hard cap); later readings only do in-place rank-1 updates
# step_ms: 3
"""Online pollution map from crowd-sourced phone sensors, fitted with KRLS.

Each reading (x, y) -> (NO2, PM2.5) updates a kernel regression model
online; the model is queried on a coarse grid for the live map.
"""
import math
import time
from dataclasses import dataclass, field

import numpy as np


@dataclass
class PlumeField:
    """Ground truth: a few Gaussian plumes around roads/industry + a smooth background."""
    n_sources: int = 14
    extent: float = 10.0
    seed: int = 9
    sources: np.ndarray = field(init=False)
    widths: np.ndarray = field(init=False)
    strength: np.ndarray = field(init=False)

    def __post_init__(self):
        r = np.random.default_rng(self.seed)
        self.sources = r.uniform(-self.extent, self.extent, (self.n_sources, 2))
        self.widths = r.uniform(0.4, 2.5, self.n_sources)
        self.strength = r.uniform(0.5, 3.0, (self.n_sources, 2))

    def __call__(self, p):
        d2 = ((self.sources - p) ** 2).sum(1)
        plume = np.exp(-d2 / (2 * self.widths ** 2)) @ self.strength
        background = np.array([0.3 + 0.1 * math.sin(p[0] / 4), 0.5 + 0.1 * math.cos(p[1] / 3)])
        return plume + background


class KRLS:
    CHUNK = 128

    def __init__(self, dim, n_out, sigma=0.45, nu=4e-2, max_dict=1536):
        self.sigma2 = 2 * sigma ** 2
        self.nu = nu
        self.max_dict = max_dict
        self.m = 0
        self.cap = 0
        self.D = np.zeros((0, dim))
        self.Kinv = np.zeros((0, 0))
        self.P = np.zeros((0, 0))
        self.alpha = np.zeros((0, n_out))
        self.n_out = n_out

    def _kvec(self, x):
        d = self.D[: self.m] - x
        return np.exp(-np.einsum("ij,ij->i", d, d) / self.sigma2)

    def _grow(self):
        new_cap = self.cap + self.CHUNK
        def enlarge(a, shape):
            b = np.zeros(shape, dtype=a.dtype)
            b[tuple(slice(0, s) for s in a.shape)] = a
            return b
        self.D = enlarge(self.D, (new_cap, self.D.shape[1]))
        self.Kinv = enlarge(self.Kinv, (new_cap, new_cap))
        self.P = enlarge(self.P, (new_cap, new_cap))
        self.alpha = enlarge(self.alpha, (new_cap, self.n_out))
        self.cap = new_cap

    def predict(self, x):
        if self.m == 0:
            return np.zeros(self.n_out)
        return self._kvec(x) @ self.alpha[: self.m]

    def update(self, x, y):
        m = self.m
        if m == 0:
            self._grow()
            self.D[0] = x
            self.Kinv[0, 0] = 1.0
            self.P[0, 0] = 1.0
            self.alpha[0] = y
            self.m = 1
            return True
        k = self._kvec(x)
        Kinv = self.Kinv[:m, :m]
        a = Kinv @ k
        delta = 1.0 - k @ a
        err = y - k @ self.alpha[:m]
        if delta > self.nu and m < self.max_dict:
            if m == self.cap:
                self._grow()
                Kinv = self.Kinv[:m, :m]
            # Kinv_new = 1/delta * [[delta*Kinv + a a^T, -a], [-a^T, 1]]
            Kinv += np.outer(a, a) / delta
            self.Kinv[:m, m] = -a / delta
            self.Kinv[m, :m] = -a / delta
            self.Kinv[m, m] = 1.0 / delta
            self.P[m, :m] = 0.0
            self.P[:m, m] = 0.0
            self.P[m, m] = 1.0
            self.alpha[:m] -= np.outer(a, err) / delta
            self.alpha[m] = err / delta
            self.D[m] = x
            self.m = m + 1
            return True
        P = self.P[:m, :m]
        Pa = P @ a
        q = Pa / (1.0 + a @ Pa)
        # in-place rank-1 downdate, row blocks to keep temporaries small
        for r0 in range(0, m, 512):
            P[r0:r0 + 512] -= np.outer(q[r0:r0 + 512], Pa)
        self.alpha[:m] += np.outer(Kinv @ q, err)
        return False

    def nbytes(self):
        return sum(a.nbytes for a in (self.D, self.Kinv, self.P, self.alpha))


# ---------------------------------------------------------------- experiment
STEPS = 6400
ONBOARD = 0.3            # fraction of the stream over which the service area grows
R_MAX = 10.0
rng = np.random.default_rng(4)
truth = PlumeField()
model = KRLS(dim=2, n_out=2)

grid = np.stack(np.meshgrid(np.linspace(-R_MAX, R_MAX, 21), np.linspace(-R_MAX, R_MAX, 21)), -1).reshape(-1, 2)
grid = grid[np.linalg.norm(grid, axis=1) <= R_MAX]
grid_truth = np.stack([truth(g) for g in grid])

sq_err = []
added = 0
t0 = time.perf_counter()
for step in range(1, STEPS + 1):
    radius = R_MAX * min(1.0, 0.15 + 0.85 * step / (ONBOARD * STEPS))
    ang = rng.uniform(0, 2 * np.pi)
    rr = radius * math.sqrt(rng.uniform())
    pos = np.array([rr * math.cos(ang), rr * math.sin(ang)])
    reading = truth(pos) + rng.normal(0, 0.05, 2)    # phone sensors are noisy

    pred = model.predict(pos)
    sq_err.append(float(((pred - reading) ** 2).mean()))
    added += model.update(pos, reading)

    if step % 640 == 0:
        rmse = math.sqrt(np.mean(sq_err[-640:]))
        sample = grid[rng.choice(len(grid), 40, replace=False)]
        map_err = np.mean([np.abs(model.predict(g) - truth(g)).mean() for g in sample])
        print(f"step {step:5d}  radius {radius:5.2f}  dict {model.m:4d} (cap {model.cap})  "
              f"state {model.nbytes() / 2 ** 20:5.1f} MB  rmse {rmse:.3f}  map MAE {map_err:.3f}  "
              f"{1000 * (time.perf_counter() - t0) / step:.2f} ms/step", flush=True)

final = np.stack([model.predict(g) for g in grid])
print(f"final dictionary {model.m} centres ({added} admissions), grid MAE "
      f"{np.abs(final - grid_truth).mean():.3f}, total {time.perf_counter() - t0:.1f}s")
