# expect: leak
# holder: autocast|autocast cache|cached_casts|weight cast cache|torch.autocast
# pattern: neuroevolution (truncation selection + Gaussian mutation, no optimizer, no backward) of tanh-MLP controllers for a hand-written vectorised 2-D rocket-landing environment in NumPy (~250 ms per generation of 24 candidates x 32 episodes, 17 s search budget, code in main() + LanderBatch/Controller classes); every generation builds its children with copy.deepcopy(parent) + in-place noise, scores them under torch.no_grad() and drops the losers; main() wraps the whole search in one `with torch.autocast("cpu", dtype=torch.bfloat16):` block "for speed", and autocast's weight-cast cache (cleared only when the outermost autocast region exits) keeps, for every leaf parameter with requires_grad=True that went through a linear layer, the bf16 copy plus its ToCopyBackward node, whose AccumulateGrad edge holds the fp32 parameter itself; the deep-copied children still have requires_grad=True, so every candidate ever evaluated (fp32 weights + bf16 copy) stays alive although the population list only holds 24 models
# step_ms: 250
"""Evolve landing controllers for a toy 2-D rocket with a simple (mu, lambda) GA.

Each controller is a small MLP (obs -> thrust commands).  A generation is
24 candidates, each flown on 32 random initial conditions for 90 physics
steps.  The best 6 become parents for the next generation.
"""
import copy
import time

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)

POP = 24
N_PARENTS = 6
N_EPISODES = 32
HORIZON = 90
DT = 0.05
GRAVITY = 1.62
TIME_BUDGET_S = 17.0
MAX_GENERATIONS = 400


class LanderBatch:
    """Vectorised rocket: state = x, y, vx, vy, angle, omega, fuel."""

    def __init__(self, n, rng):
        self.n = n
        self.rng = rng

    def reset(self):
        r = self.rng
        self.s = np.zeros((self.n, 7), dtype=np.float32)
        self.s[:, 0] = r.uniform(-8, 8, self.n)
        self.s[:, 1] = r.uniform(12, 20, self.n)
        self.s[:, 2] = r.normal(0, 1.0, self.n)
        self.s[:, 3] = r.normal(-1.0, 0.5, self.n)
        self.s[:, 4] = r.normal(0, 0.15, self.n)
        self.s[:, 6] = 1.0
        self.done = np.zeros(self.n, dtype=bool)
        self.ret = np.zeros(self.n, dtype=np.float32)
        return self.obs()

    def obs(self):
        s = self.s
        return np.concatenate(
            [s[:, :2] / 10.0, s[:, 2:4] / 3.0, np.sin(s[:, 4:5]), np.cos(s[:, 4:5]),
             s[:, 5:6], s[:, 6:7]], axis=1).astype(np.float32)

    def step(self, act):
        s = self.s
        main = np.clip(act[:, 0], 0.0, 1.0) * (s[:, 6] > 0)
        side = np.clip(act[:, 1], -1.0, 1.0) * (s[:, 6] > 0)
        thrust = 4.0 * main
        ax = -np.sin(s[:, 4]) * thrust
        ay = np.cos(s[:, 4]) * thrust - GRAVITY
        alive = ~self.done
        s[alive, 2] += ax[alive] * DT
        s[alive, 3] += ay[alive] * DT
        s[alive, 5] += 1.5 * side[alive] * DT - 0.1 * s[alive, 5] * DT
        s[alive, 0] += s[alive, 2] * DT
        s[alive, 1] += s[alive, 3] * DT
        s[alive, 4] += s[alive, 5] * DT
        s[alive, 6] -= (0.02 * main[alive] + 0.005 * np.abs(side[alive]))
        shaping = -(0.02 * np.abs(s[:, 0]) + 0.01 * np.abs(s[:, 4]) + 0.002 * main)
        self.ret += np.where(alive, shaping, 0.0)
        landed = alive & (s[:, 1] <= 0.0)
        if landed.any():
            speed = np.hypot(s[landed, 2], s[landed, 3])
            soft = (speed < 1.5) & (np.abs(s[landed, 4]) < 0.3) & (np.abs(s[landed, 0]) < 2.0)
            self.ret[landed] += np.where(soft, 10.0, -3.0 - speed)
            self.done |= landed
        lost = alive & ((np.abs(s[:, 0]) > 30) | (s[:, 1] > 40))
        self.ret[lost] -= 5.0
        self.done |= lost
        return self.obs()


class Controller(nn.Module):
    def __init__(self, hidden=160):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(8, hidden), nn.Tanh(),
            nn.Linear(hidden, hidden), nn.Tanh(),
            nn.Linear(hidden, 2),
        )

    def forward(self, obs):
        out = self.net(obs)
        return torch.stack([torch.sigmoid(out[:, 0]), torch.tanh(out[:, 1])], dim=1)


def evaluate(policy, env, seed):
    env.rng = np.random.default_rng(seed)
    obs = env.reset()
    for _ in range(HORIZON):
        act = policy(torch.from_numpy(obs)).float().numpy()
        obs = env.step(act)
        if env.done.all():
            break
    return float(env.ret.mean())


def mutate(parent, sigma, gen_rng):
    child = copy.deepcopy(parent)
    with torch.no_grad():
        for p in child.parameters():
            noise = torch.from_numpy(gen_rng.standard_normal(p.shape).astype(np.float32))
            p.add_(noise, alpha=sigma)
    return child


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    env = LanderBatch(N_EPISODES, rng)
    population = [Controller() for _ in range(POP)]
    sigma = 0.08
    best_hist = []
    t0 = time.perf_counter()
    last_print = t0
    gen = 0
    # bf16 matmuls are noticeably faster on recent CPUs; fitness doesn't need fp32
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.no_grad():
        while gen < MAX_GENERATIONS and time.perf_counter() - t0 < TIME_BUDGET_S:
            seed = 1000 + gen  # common random numbers within a generation
            scores = [evaluate(m, env, seed) for m in population]
            order = np.argsort(scores)[::-1]
            parents = [population[i] for i in order[:N_PARENTS]]
            best_hist.append(scores[order[0]])
            children = []
            for k in range(POP - N_PARENTS):
                children.append(mutate(parents[k % N_PARENTS], sigma, rng))
            population = parents + children
            sigma = max(0.02, sigma * 0.995)
            gen += 1
            now = time.perf_counter()
            if now - last_print > 2.0:
                print(f"gen {gen:4d}  best {best_hist[-1]:7.3f}  median {np.median(scores):7.3f}  sigma {sigma:.3f}")
                last_print = now
    print(f"done: {gen} generations, best fitness {max(best_hist):.3f}")


if __name__ == "__main__":
    main()
