# expect: leak
# holder: main:trajectories|trajectories
# pattern: A2C (n-step advantage actor-critic, hand-written SGD update under torch.no_grad(), no torch.optim) on a vectorised point-robot navigation task with 24 lidar rays (48 envs in NumPy, 40-step time limit), everything in main() plus a few module-level helpers; one loop iteration = one environment step of all envs (~1 ms), an update every 8 steps. Every running episode's transitions (per-step observation copies, actions, rewards) live in main()'s `trajectories` dict keyed by episode id; when episodes finish, their removal is deferred until after the next update with `release_after_update.append(lambda: trajectories.pop(eid, None))` inside the `for i in done` loop. The lambda closes over main()'s variable `eid`, not its value at that time (late binding), so when the callbacks run after the update they all pop the id of the *last* episode that finished; every other finished episode of the window (usually several, because time-limit truncations finish many envs on the same step) stays in `trajectories` forever, while `pop(..., None)` hides the repeated misses.
# step_ms: 1
"""A2C on a vectorised lidar point-robot navigation task (hand-written SGD)."""
import time
from collections import deque

import numpy as np
import psutil
import torch
import torch.nn.functional as F

N_RAYS = 24
OBS_DIM = N_RAYS + 6
ACTIONS = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.float32)


def rss_mb():
    return psutil.Process().memory_info().rss / 2**20


class VecNav:
    def __init__(self, n, seed=0, limit=40):
        self.n, self.limit = n, limit
        self.rng = np.random.default_rng(seed)
        self.obstacles = self.rng.uniform(-1, 1, size=(10, 2)).astype(np.float32)
        self.radius = 0.12
        ang = np.linspace(0, 2 * np.pi, N_RAYS, endpoint=False)
        self.dirs = np.stack([np.cos(ang), np.sin(ang)], 1).astype(np.float32)
        self.pos = np.zeros((n, 2), np.float32)
        self.vel = np.zeros((n, 2), np.float32)
        self.goal = np.zeros((n, 2), np.float32)
        self.t = np.zeros(n, np.int64)
        self.reset(np.ones(n, bool))

    def reset(self, mask):
        k = int(mask.sum())
        self.pos[mask] = self.rng.uniform(-0.9, 0.9, size=(k, 2))
        self.goal[mask] = self.rng.uniform(-0.9, 0.9, size=(k, 2))
        self.vel[mask] = 0
        self.t[mask] = 0

    def lidar(self):
        rel = self.obstacles[None, :, :] - self.pos[:, None, :]           # n x O x 2
        proj = np.einsum("nod,rd->nor", rel, self.dirs)                   # n x O x R
        perp2 = (rel ** 2).sum(-1)[..., None] - proj ** 2
        hit = (proj > 0) & (perp2 < self.radius ** 2)
        dist = np.where(hit, proj - np.sqrt(np.maximum(self.radius ** 2 - perp2, 0)), 2.0)
        return np.clip(dist.min(1), 0, 2.0) / 2.0

    def observe(self):
        return np.concatenate([self.lidar(), self.pos, self.vel, self.goal - self.pos], 1).astype(np.float32)

    def step(self, action):
        self.vel = 0.8 * self.vel + 0.02 * ACTIONS[action]
        self.pos = np.clip(self.pos + self.vel, -1, 1)
        self.t += 1
        d = np.linalg.norm(self.goal - self.pos, axis=1)
        crash = (np.linalg.norm(self.pos[:, None] - self.obstacles[None], axis=2) < self.radius).any(1)
        reached = d < 0.1
        reward = (-0.05 * d + 1.0 * reached - 0.5 * crash).astype(np.float32)
        done = reached | crash | (self.t >= self.limit)
        if done.any():
            self.reset(done)
        return self.observe(), reward, done


def init_params(seed=0, hidden=256):
    g = torch.Generator().manual_seed(seed)

    def lin(i, o):
        w = (torch.randn(i, o, generator=g) / np.sqrt(i)).requires_grad_()
        return w, torch.zeros(o, requires_grad=True)

    W1, b1 = lin(OBS_DIM, hidden)
    W2, b2 = lin(hidden, hidden)
    Wp, bp = lin(hidden, len(ACTIONS))
    Wv, bv = lin(hidden, 1)
    return [W1, b1, W2, b2, Wp, bp, Wv, bv]


def forward(params, x):
    W1, b1, W2, b2, Wp, bp, Wv, bv = params
    h = torch.tanh(x @ W1 + b1)
    h = torch.tanh(h @ W2 + b2)
    return h @ Wp + bp, (h @ Wv + bv).squeeze(-1)


def new_trajectory():
    return {"obs": [], "actions": [], "rewards": []}


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    np.random.seed(0)
    n_envs, n_steps, total_steps = 48, 8, 14400
    gamma, lr, ent_coef = 0.97, 0.02, 0.01
    env = VecNav(n_envs, seed=0)
    params = init_params(seed=0)

    obs = env.observe()
    trajectories = {}
    episode_ids = list(range(n_envs))
    for eid in episode_ids:
        trajectories[eid] = new_trajectory()
    next_eid = n_envs
    release_after_update = []     # drop finished episodes once the update that used them is done
    recent_returns, recent_lengths = deque(maxlen=200), deque(maxlen=200)
    logps, values, entropies, rewards, dones = [], [], [], [], []

    print(f"start: rss={rss_mb():.1f} MB")
    t0 = time.time()
    for step in range(1, total_steps + 1):
        logits, value = forward(params, torch.from_numpy(obs))
        dist = torch.distributions.Categorical(logits=logits)
        action = dist.sample()
        a = action.numpy()
        next_obs, reward, done = env.step(a)

        logps.append(dist.log_prob(action))
        values.append(value)
        entropies.append(dist.entropy())
        rewards.append(torch.from_numpy(reward))
        dones.append(torch.from_numpy(done.astype(np.float32)))

        for i in range(n_envs):
            tr = trajectories[episode_ids[i]]
            tr["obs"].append(obs[i].copy())
            tr["actions"].append(int(a[i]))
            tr["rewards"].append(float(reward[i]))
        for i in np.flatnonzero(done):
            eid = episode_ids[i]
            tr = trajectories[eid]
            recent_returns.append(sum(tr["rewards"]))
            recent_lengths.append(len(tr["rewards"]))
            release_after_update.append(lambda: trajectories.pop(eid, None))
            episode_ids[i] = next_eid
            trajectories[next_eid] = new_trajectory()
            next_eid += 1
        obs = next_obs

        if step % n_steps == 0:
            with torch.no_grad():
                _, ret = forward(params, torch.from_numpy(obs))
            returns = []
            for r, d in zip(reversed(rewards), reversed(dones)):
                ret = r + gamma * ret * (1 - d)
                returns.append(ret)
            returns = torch.stack(returns[::-1])
            V, LP, H = torch.stack(values), torch.stack(logps), torch.stack(entropies)
            adv = returns - V
            loss = -(LP * adv.detach()).mean() + 0.5 * adv.pow(2).mean() - ent_coef * H.mean()
            loss.backward()
            with torch.no_grad():
                gnorm = torch.sqrt(sum((p.grad ** 2).sum() for p in params))
                scale = min(1.0, 1.0 / (gnorm.item() + 1e-8))
                for p in params:
                    p -= lr * scale * p.grad
                    p.grad = None
            logps, values, entropies, rewards, dones = [], [], [], [], []
            for release in release_after_update:
                release()
            release_after_update.clear()

        if step % 1200 == 0:
            print(f"step {step:5d}  episodes={next_eid - n_envs:6d}  return(200)={np.mean(recent_returns):+.3f}  "
                  f"len(200)={np.mean(recent_lengths):.1f}  {1000 * (time.time() - t0) / step:.2f} ms/step  "
                  f"rss={rss_mb():.1f} MB")
    print(f"end: rss={rss_mb():.1f} MB  wall={time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
