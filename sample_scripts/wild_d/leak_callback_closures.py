# expect: leak
# holder: _callbacks|abort_hooks
# pattern: CMA-ES policy search registers a new on-abort lambda every generation that closes over that generation's population, fitness and covariance arrays; the hook registry is never cleared
# step_ms: 12
"""CMA-ES (numpy only) tuning a tiny neural controller for a cart-pole.

The evolution strategy is a compact version of Hansen's ``purecma``: rank-mu
and rank-one covariance updates with cumulative step-size adaptation.  Fitness
is the (negated) number of steps the pole stays up, simulated in a vectorised
numpy cart-pole for the whole population at once.

So that a Ctrl-C still leaves something useful on disk, every generation
registers an abort hook that dumps the *current* population and covariance.

Why it leaks: ``abort_hooks.register`` appends to ``Hooks._callbacks`` and is
called once per generation; each lambda closes over that generation's
``X``/``fitness`` arrays and covariance matrix, so every population ever
sampled stays alive.

Fix: register a single hook once that reads the latest state from the
optimizer object (``lambda: dump(es.last_X, ...)``), or replace the previous
hook instead of appending.
"""
import time

import numpy as np

GENERATIONS = 1500
POPSIZE = 48
HIDDEN = 8
HORIZON = 250


class Hooks:
    def __init__(self):
        self._callbacks = []

    def register(self, fn):
        self._callbacks.append(fn)
        return fn

    def fire(self):
        for fn in self._callbacks:
            fn()


abort_hooks = Hooks()


class CMAES:
    def __init__(self, x0, sigma, popsize, seed=0):
        self.rng = np.random.default_rng(seed)
        n = len(x0)
        self.n, self.lam = n, popsize
        self.mean = np.asarray(x0, dtype=float)
        self.sigma = sigma
        mu = popsize // 2
        w = np.log(mu + 0.5) - np.log(np.arange(1, mu + 1))
        self.w = w / w.sum()
        self.mu = mu
        self.mueff = 1.0 / (self.w ** 2).sum()
        self.cc = (4 + self.mueff / n) / (n + 4 + 2 * self.mueff / n)
        self.cs = (self.mueff + 2) / (n + self.mueff + 5)
        self.c1 = 2 / ((n + 1.3) ** 2 + self.mueff)
        self.cmu = min(1 - self.c1, 2 * (self.mueff - 2 + 1 / self.mueff) / ((n + 2) ** 2 + self.mueff))
        self.damps = 1 + 2 * max(0, np.sqrt((self.mueff - 1) / (n + 1)) - 1) + self.cs
        self.chiN = np.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n * n))
        self.pc = np.zeros(n)
        self.ps = np.zeros(n)
        self.C = np.eye(n)
        self.B = np.eye(n)
        self.D = np.ones(n)
        self.gen = 0

    def ask(self):
        Z = self.rng.standard_normal((self.lam, self.n))
        return self.mean + self.sigma * (Z * self.D) @ self.B.T

    def tell(self, X, fitness):
        order = np.argsort(fitness)
        Xsel = X[order[: self.mu]]
        old = self.mean
        self.mean = self.w @ Xsel
        y = (self.mean - old) / self.sigma
        invsqrtC = self.B @ np.diag(1 / self.D) @ self.B.T
        self.ps = (1 - self.cs) * self.ps + np.sqrt(self.cs * (2 - self.cs) * self.mueff) * invsqrtC @ y
        hsig = np.linalg.norm(self.ps) / np.sqrt(1 - (1 - self.cs) ** (2 * (self.gen + 1))) < (1.4 + 2 / (self.n + 1)) * self.chiN
        self.pc = (1 - self.cc) * self.pc + hsig * np.sqrt(self.cc * (2 - self.cc) * self.mueff) * y
        artmp = (Xsel - old) / self.sigma
        self.C = ((1 - self.c1 - self.cmu) * self.C
                  + self.c1 * (np.outer(self.pc, self.pc) + (1 - hsig) * self.cc * (2 - self.cc) * self.C)
                  + self.cmu * (artmp.T * self.w) @ artmp)
        self.sigma *= np.exp((self.cs / self.damps) * (np.linalg.norm(self.ps) / self.chiN - 1))
        self.sigma = float(np.clip(self.sigma, 1e-8, 1e3))
        self.C = np.triu(self.C) + np.triu(self.C, 1).T
        D2, self.B = np.linalg.eigh(self.C)
        self.D = np.sqrt(np.maximum(D2, 1e-20))
        self.gen += 1


def unpack(theta):
    i = 0
    W1 = theta[:, i:i + 4 * HIDDEN].reshape(-1, HIDDEN, 4); i += 4 * HIDDEN
    b1 = theta[:, i:i + HIDDEN]; i += HIDDEN
    W2 = theta[:, i:i + HIDDEN]; i += HIDDEN
    b2 = theta[:, i]
    return W1, b1, W2, b2


def cartpole_fitness(theta, rng):
    """Vectorised cart-pole: returns -(steps survived) for each parameter row."""
    W1, b1, W2, b2 = unpack(theta)
    P = theta.shape[0]
    s = rng.uniform(-0.05, 0.05, size=(P, 4))
    alive = np.ones(P, dtype=bool)
    steps = np.zeros(P)
    g, mc, mp, l, dt = 9.8, 1.0, 0.1, 0.5, 0.02
    for _ in range(HORIZON):
        h = np.tanh(np.einsum("phi,pi->ph", W1, s) + b1)
        force = 10.0 * np.tanh((W2 * h).sum(1) + b2)
        x, xd, th, thd = s.T
        ct, st = np.cos(th), np.sin(th)
        tmp = (force + mp * l * thd ** 2 * st) / (mc + mp)
        thacc = (g * st - ct * tmp) / (l * (4 / 3 - mp * ct ** 2 / (mc + mp)))
        xacc = tmp - mp * l * thacc * ct / (mc + mp)
        s = np.stack([x + dt * xd, xd + dt * xacc, th + dt * thd, thd + dt * thacc], axis=1)
        alive &= (np.abs(s[:, 0]) < 2.4) & (np.abs(s[:, 2]) < 0.21)
        steps += alive
    return -steps - 0.01 * np.abs(s[:, 0])


def dump_population(X, fitness, gen, C):
    np.savez("/tmp/cmaes_abort_dump.npz", X=X, fitness=fitness, gen=gen, C=C)


def main():
    dim = 4 * HIDDEN + HIDDEN + HIDDEN + 1
    es = CMAES(np.zeros(dim), sigma=0.5, popsize=POPSIZE, seed=3)
    rng = np.random.default_rng(7)
    best = np.inf
    t0 = time.time()
    try:
        for gen in range(GENERATIONS):
            X = es.ask()
            fitness = cartpole_fitness(X, rng)
            es.tell(X, fitness)
            best = min(best, fitness.min())
            abort_hooks.register(lambda X=X, f=fitness, g=gen, C=es.C: dump_population(X, f, g, C))
            if (gen + 1) % 300 == 0:
                print(f"[{time.time() - t0:5.1f}s] gen {gen + 1:5d}  best={-best:.0f}  "
                      f"median={-np.median(fitness):.0f}  sigma={es.sigma:.3g}")
    except KeyboardInterrupt:
        abort_hooks.fire()
        raise
    print(f"finished {es.gen} generations, best episode length {-best:.0f}/{HORIZON}")


if __name__ == "__main__":
    main()
