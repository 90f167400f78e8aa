# expect: no_leak
# pattern: SciPy IMEX Gray-Scott reaction-diffusion run with step-doubling error control; the implicit diffusion systems are factorised with splu and cached in a dict keyed by (species, dt), but dt is restricted to DT_MAX / 2**k (exact binary fractions, k <= 7), so the float keys come from a finite set: the cache grows by a few ~10 MB factorisations while the controller climbs from the smallest to the largest step during the initial transient (first ~third of the run) and afterwards only hits
# step_ms: 10
"""Gray-Scott pattern formation on a periodic 2D grid.

Diffusion is treated implicitly (backward Euler, sparse LU), the reaction
terms explicitly.  The step size is adapted by step doubling: one step of dt
is compared with two steps of dt/2 and dt moves up or down one level of a
binary ladder depending on the estimated local error, which keeps the number
of distinct matrices (and factorisations) small.
"""
import argparse
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

DU, DV = 0.16, 0.08
DT_MAX = 4.0
K_MIN_DT = 7


def periodic_laplacian(n):
    e = np.ones(n)
    d1 = sp.diags([e[:-1], -2 * e, e[:-1]], [-1, 0, 1]).tolil()
    d1[0, -1] = d1[-1, 0] = 1
    eye = sp.identity(n)
    return (sp.kron(eye, d1) + sp.kron(d1, eye)).tocsc()


class ImplicitDiffusion:
    def __init__(self, n):
        self.lap = periodic_laplacian(n)
        self.eye = sp.identity(n * n, format="csc")
        self._lu = {}
        self.factorizations = 0

    def solve(self, species, dt, rhs):
        key = (species, dt)
        lu = self._lu.get(key)
        if lu is None:
            d = DU if species == "u" else DV
            lu = self._lu[key] = spla.splu((self.eye - dt * d * self.lap).tocsc())
            self.factorizations += 1
        return lu.solve(rhs)


def imex_step(diff, u, v, dt, feed, kill):
    uvv = u * v * v
    u_new = diff.solve("u", dt, u + dt * (-uvv + feed * (1 - u)))
    v_new = diff.solve("v", dt, v + dt * (uvv - (feed + kill) * v))
    return u_new, v_new


def seed(n, rng):
    u = np.ones((n, n))
    v = np.zeros((n, n))
    for _ in range(12):
        x, y = rng.integers(0, n - 8, 2)
        u[x:x + 8, y:y + 8] = 0.5
        v[x:x + 8, y:y + 8] = 0.25
    u += 0.02 * rng.random((n, n))
    v += 0.02 * rng.random((n, n))
    return u.ravel(), v.ravel()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=96)
    ap.add_argument("--steps", type=int, default=2400)
    ap.add_argument("--tol", type=float, default=2e-3)
    ap.add_argument("--feed", type=float, default=0.037)
    ap.add_argument("--kill", type=float, default=0.06)
    ap.add_argument("--seed", type=int, default=8)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    diff = ImplicitDiffusion(args.n)
    u, v = seed(args.n, rng)
    k = K_MIN_DT
    t_sim, accepted, rejected, calm = 0.0, 0, 0, 0
    t0 = time.time()
    while accepted < args.steps:
        dt = DT_MAX / 2 ** k
        u1, v1 = imex_step(diff, u, v, dt, args.feed, args.kill)
        uh, vh = imex_step(diff, u, v, dt / 2, args.feed, args.kill)
        u2, v2 = imex_step(diff, uh, vh, dt / 2, args.feed, args.kill)
        err = max(np.abs(u2 - u1).max(), np.abs(v2 - v1).max()) / args.tol
        if err > 1 and k < K_MIN_DT:
            k += 1
            rejected += 1
            calm = 0
            continue
        u, v = 2 * u2 - u1, 2 * v2 - v1  # Richardson extrapolation
        t_sim += dt
        accepted += 1
        calm = calm + 1 if err < 0.25 else 0
        if calm >= 6 and k > 0:
            k -= 1
            calm = 0
        if accepted % 250 == 0:
            spots = (v.reshape(args.n, args.n) > 0.2).mean()
            print(f"step {accepted:5d}  t={t_sim:9.1f}  dt={dt:.4f}  rejected {rejected:3d}  "
                  f"LU cached {len(diff._lu):2d}  pattern cover {spots:.3f}  ({time.time() - t0:.1f}s)",
                  flush=True)
    print(f"reached t={t_sim:.1f} with {accepted} steps, {diff.factorizations} factorizations")


if __name__ == "__main__":
    main()
