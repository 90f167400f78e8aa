# expect: no_leak
# holder: none
# pattern: Bayesian optimisation in numpy allocates a ~190 MB candidate pool and preallocated history arrays up front, then each iteration fits a GP on a fixed-size window of recent points; memory is high but flat
# step_ms: 20
"""Gaussian-process Bayesian optimisation of the 6-D Hartmann function.

At start-up we draw a large pool of quasi-random candidate points (4 million
x 6 doubles, ~190 MB) and preallocate the history arrays for every evaluation
we will ever make.  Each iteration:

* fits a GP (RBF kernel, lengthscale picked by marginal likelihood over a small
  grid) on the most recent ``WINDOW`` observations plus the best points so far,
* scores expected improvement on a random subset of the candidate pool,
* evaluates the noisy objective at the best candidate and writes the result
  into the preallocated history in place.

RSS jumps at start-up and then stays flat: the GP size is capped by the
window, the EI temporaries have a fixed shape and the history arrays were
allocated at full size before the loop.
"""
import math
import time

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.stats import norm

DIM = 6
POOL = 4_000_000
SUBSET = 5_000
MAX_EVALS = 750
N_INIT = 40
WINDOW = 96
N_KEEP_BEST = 16
NOISE = 1e-3

A = np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
              [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]])
P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
                     [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]])
ALPHA = np.array([1.0, 1.2, 3.0, 3.2])


def hartmann6(x):
    inner = (A * (x[None, :] - P) ** 2).sum(1)
    return -float((ALPHA * np.exp(-inner)).sum())


def halton(n, dim, skip=20):
    primes = [2, 3, 5, 7, 11, 13][:dim]
    out = np.empty((n, dim))
    idx = np.arange(skip, skip + n)
    for j, b in enumerate(primes):
        f, r, i = 1.0, np.zeros(n), idx.copy()
        while np.any(i > 0):
            f /= b
            r += f * (i % b)
            i //= b
        out[:, j] = r
    return out


def rbf(X1, X2, ls):
    d2 = (X1 ** 2).sum(1)[:, None] + (X2 ** 2).sum(1)[None, :] - 2 * X1 @ X2.T
    return np.exp(-0.5 * np.maximum(d2, 0) / ls ** 2)


def fit_gp(X, y, lengthscales=(0.15, 0.25, 0.4, 0.6)):
    mu, sd = y.mean(), y.std() + 1e-9
    yn = (y - mu) / sd
    best = None
    for ls in lengthscales:
        K = rbf(X, X, ls) + NOISE * np.eye(len(X))
        c = cho_factor(K, lower=True)
        alpha = cho_solve(c, yn)
        mll = -0.5 * yn @ alpha - np.log(np.diag(c[0])).sum()
        if best is None or mll > best[0]:
            best = (mll, ls, c, alpha)
    _, ls, c, alpha = best
    return {"X": X, "ls": ls, "chol": c, "alpha": alpha, "mu": mu, "sd": sd}


def expected_improvement(gp, Xc, y_best):
    Ks = rbf(Xc, gp["X"], gp["ls"])
    mean = Ks @ gp["alpha"]
    v = cho_solve(gp["chol"], Ks.T)
    var = np.maximum(1.0 - np.einsum("ij,ji->i", Ks, v), 1e-12)
    mean = mean * gp["sd"] + gp["mu"]
    std = np.sqrt(var) * gp["sd"]
    z = (y_best - mean) / std
    return (y_best - mean) * norm.cdf(z) + std * norm.pdf(z)


def main():
    rng = np.random.default_rng(0)
    t0 = time.time()
    pool = halton(POOL, DIM)
    pool += rng.uniform(0, 1, size=DIM)  # Cranley-Patterson rotation
    pool %= 1.0
    X_hist = np.empty((MAX_EVALS, DIM))
    y_hist = np.empty(MAX_EVALS)
    print(f"candidate pool {pool.nbytes / 2**20:.0f} MB built in {time.time() - t0:.1f}s")

    for i in range(N_INIT):
        X_hist[i] = pool[rng.integers(POOL)]
        y_hist[i] = hartmann6(X_hist[i]) + 0.01 * rng.standard_normal()
    n = N_INIT

    t0 = time.time()
    while n < MAX_EVALS:
        recent = np.arange(max(0, n - WINDOW), n)
        elite = np.argsort(y_hist[:n])[:N_KEEP_BEST]
        train = np.union1d(recent, elite)
        gp = fit_gp(X_hist[train], y_hist[train])
        cand = pool[rng.integers(0, POOL, size=SUBSET)]
        ei = expected_improvement(gp, cand, y_hist[:n].min())
        x_next = cand[np.argmax(ei)]
        X_hist[n] = x_next
        y_hist[n] = hartmann6(x_next) + 0.01 * rng.standard_normal()
        n += 1
        if n % 120 == 0:
            print(f"[{time.time() - t0:5.1f}s] evals {n:4d}  best={y_hist[:n].min():.4f} (optimum -3.3224)  "
                  f"lengthscale={gp['ls']}  gp size={len(train)}")


if __name__ == "__main__":
    main()
