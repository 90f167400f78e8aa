# expect: no_leak
# holder:
# pattern: NumPy-only cross-entropy-method policy search (no torch, no optimizer) for swing-up of a hand-written double pendulum (RK4, 36 candidate tanh-MLP policies (a third of them wide 'explorer' samples) simulated as batched NumPy arrays in chunks of 6, randomly kicked start states, ~37 ms per CEM generation, code in main() + a CEMSearch class + module-level dynamics). Aggressive candidates make the integrator blow up, which is signalled by raising a fresh SimulationDiverged exception from deep inside rollout(); CEMSearch.evaluate() catches it per chunk, gives the chunk a penalty fitness and keeps a record for the end-of-run report. It looks like the exceptions-with-tracebacks leak (a failure log on a long-lived object, kept across generations, with the rollout frames holding the state trajectories), but the log stores traceback.TracebackException.from_exception(exc) summaries (filename/line/name strings, no frame references) in a deque(maxlen=24), the `except ... as exc` name is cleared at the end of the handler so the exception and its traceback die there, counters are plain ints, and the elite trajectories are kept in a deque(maxlen=4), so memory is flat after the first generations.
# step_ms: 37
"""CEM swing-up of a double pendulum (NumPy only) with a divergence log."""
import time
import traceback
from collections import Counter, deque

import numpy as np
import psutil

DT, HORIZON, HIDDEN = 0.025, 60, 24
OBS, ACT = 6, 1


class SimulationDiverged(RuntimeError):
    pass


def rss_mb():
    return psutil.Process().memory_info().rss / 2**20


def dynamics(s, u):
    """Double pendulum on a fixed base, batched: s = (th1, th2, w1, w2)."""
    th1, th2, w1, w2 = s.T
    m1 = m2 = 1.0
    l1 = l2 = 1.0
    g = 9.81
    d = th1 - th2
    den = 2 * m1 + m2 - m2 * np.cos(2 * d)
    a1 = (-g * (2 * m1 + m2) * np.sin(th1) - m2 * g * np.sin(th1 - 2 * th2)
          - 2 * np.sin(d) * m2 * (w2 ** 2 * l2 + w1 ** 2 * l1 * np.cos(d))) / (l1 * den) + u[:, 0] - 0.05 * w1
    a2 = (2 * np.sin(d) * (w1 ** 2 * l1 * (m1 + m2) + g * (m1 + m2) * np.cos(th1)
                           + w2 ** 2 * l2 * m2 * np.cos(d))) / (l2 * den) - 0.05 * w2
    return np.stack([w1, w2, a1, a2], axis=1)


def rk4(s, u):
    k1 = dynamics(s, u)
    k2 = dynamics(s + 0.5 * DT * k1, u)
    k3 = dynamics(s + 0.5 * DT * k2, u)
    k4 = dynamics(s + DT * k3, u)
    return s + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def observe(s):
    return np.concatenate([np.cos(s[:, :2]), np.sin(s[:, :2]), s[:, 2:] / 10], axis=1)


def policy(theta, obs):
    """theta: (K, P) flat parameters of K tanh-MLPs; obs: (K, OBS)."""
    K = len(theta)
    i = 0
    W1 = theta[:, i:i + OBS * HIDDEN].reshape(K, OBS, HIDDEN); i += OBS * HIDDEN
    b1 = theta[:, i:i + HIDDEN]; i += HIDDEN
    W2 = theta[:, i:i + HIDDEN * ACT].reshape(K, HIDDEN, ACT); i += HIDDEN * ACT
    h = np.tanh(np.einsum("ko,koh->kh", obs, W1) + b1)
    return 14.0 * np.einsum("kh,kha->ka", h, W2)


N_PARAMS = OBS * HIDDEN + HIDDEN + HIDDEN * ACT


def rollout(theta, start):
    s = np.repeat(start[None], len(theta), axis=0)
    traj = np.empty((HORIZON, len(theta), 4))
    reward = np.zeros(len(theta))
    for t in range(HORIZON):
        u = policy(theta, observe(s))
        s = rk4(s, u)
        if not np.isfinite(s).all() or np.abs(s[:, 2:]).max() > 25:
            raise SimulationDiverged(f"integrator blew up at t={t}: max|w|={np.nanmax(np.abs(s[:, 2:])):.1f}")
        traj[t] = s
        tip_height = -np.cos(s[:, 0]) - np.cos(s[:, 1])
        reward += tip_height - 0.001 * (u[:, 0] ** 2)
    return reward / HORIZON, traj


class CEMSearch:
    def __init__(self, pop=36, elite=6, chunk=6, seed=0):
        self.rng = np.random.default_rng(seed)
        self.pop, self.elite, self.chunk = pop, elite, chunk
        self.mu = np.zeros(N_PARAMS)
        self.sigma = np.full(N_PARAMS, 0.6)
        self.failures = deque(maxlen=24)        # TracebackException summaries for the report
        self.failure_counts = Counter()
        self.elite_trajs = deque(maxlen=4)

    def evaluate(self, thetas, start):
        fitness = np.empty(len(thetas))
        trajs = [None] * len(thetas)
        for c in range(0, len(thetas), self.chunk):
            try:
                fit, traj = rollout(thetas[c:c + self.chunk], start)
            except SimulationDiverged as exc:
                self.failures.append(traceback.TracebackException.from_exception(exc))
                self.failure_counts[type(exc).__name__] += 1
                fitness[c:c + self.chunk] = -5.0          # penalty: unsafe controller
                continue
            fitness[c:c + self.chunk] = fit
            for k in range(len(fit)):
                trajs[c + k] = traj[:, k]
        return fitness, trajs

    def generation(self):
        thetas = self.mu + self.sigma * self.rng.normal(size=(self.pop, N_PARAMS))
        n_explore = self.pop // 3              # wide "explorer" samples against premature convergence
        thetas[:n_explore] = self.mu + (2 * self.sigma + 0.2) * self.rng.normal(size=(n_explore, N_PARAMS))
        # randomised start (a kicked pendulum) so the controller has to be robust
        start = np.concatenate([self.rng.normal(scale=0.3, size=2), self.rng.normal(scale=5.0, size=2)])
        fitness, trajs = self.evaluate(thetas, start)
        safe = np.array([t is not None for t in trajs])
        order = [i for i in np.argsort(-fitness) if safe[i]][:self.elite]
        if len(order) >= 2:
            elite = thetas[order]
            self.mu = 0.8 * self.mu + 0.2 * elite.mean(0)
            self.sigma = np.maximum(0.8 * self.sigma + 0.2 * elite.std(0), 0.1)
            self.elite_trajs.append(trajs[order[0]].copy())
        else:
            self.sigma *= 0.7                  # nothing safe: search more cautiously
        best = fitness.max()
        return best, float(np.mean([t is not None for t in trajs]))


def main():
    np.random.seed(0)
    search = CEMSearch(seed=0)
    generations = 400
    bests = []
    print(f"start: rss={rss_mb():.1f} MB")
    t0 = time.time()
    for gen in range(1, generations + 1):
        best, ok_frac = search.generation()
        bests.append(best)
        if gen % 40 == 0:
            last = search.failures[-1] if search.failures else None
            where = f"{last.stack[-1].name}:{last.stack[-1].lineno}" if last else "-"
            print(f"gen {gen:4d}  best={np.max(bests[-40:]):+.3f}  safe={ok_frac:.2f}  "
                  f"diverged_chunks={sum(search.failure_counts.values()):4d} (last at {where})  "
                  f"{1000 * (time.time() - t0) / gen:.1f} ms/gen  rss={rss_mb():.1f} MB")
    print("most recent failure:")
    print("".join(search.failures[-1].format()).rstrip() if search.failures else "  none")
    print(f"end: rss={rss_mb():.1f} MB  wall={time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
