# expect: leak
# holder: _instances|RolloutBuffer
# pattern: PPO creates a fresh RolloutBuffer every update and RolloutBuffer.__init__ registers self in a class-level list (used for memory stats), so every buffer's tensors stay alive
# step_ms: 100
"""Hand-written PPO (clipped objective, GAE) on a 2-D navigation task.

Each update collects a fixed-length rollout from 16 vectorised environments
into a new ``RolloutBuffer``, computes GAE advantages and runs a few epochs of
minibatch PPO with ``torch.optim.Adam``.  ``RolloutBuffer`` keeps a class-level
list of its instances so that ``RolloutBuffer.total_mb()`` can report how much
memory rollout storage uses.

Why it leaks: ``RolloutBuffer._instances`` is a class attribute, so it lives
for the whole program and holds a strong reference to every buffer ever
created (observations, actions, log-probs, advantages, returns ...), even
though each buffer is only used for one update.  Ironically the memory
report itself shows the growth.

Fix: use ``weakref.WeakSet()`` for the registry, or allocate one buffer up
front and reuse it.
"""
import math
import time

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)

N_ENVS = 16
N_STEPS = 128
N_RAYS = 16
N_UPDATES = 160
EPOCHS = 3
MINIBATCH = 512


class NavEnv:
    """Point mass that must reach a goal while avoiding circular obstacles."""

    n_obstacles = 6
    obs_dim = 6 + N_RAYS

    def __init__(self, n, seed=0):
        self.n = n
        self.rng = np.random.default_rng(seed)
        self.angles = np.linspace(0, 2 * np.pi, N_RAYS, endpoint=False)
        self.dirs = np.stack([np.cos(self.angles), np.sin(self.angles)], 1)  # (R, 2)
        self.t = np.zeros(n, dtype=int)
        self.pos = np.zeros((n, 2))
        self.vel = np.zeros((n, 2))
        self.goal = np.zeros((n, 2))
        self.obst = np.zeros((n, self.n_obstacles, 2))
        self._reset(np.ones(n, dtype=bool))

    def _reset(self, mask):
        k = int(mask.sum())
        self.pos[mask] = self.rng.uniform(-1, 1, size=(k, 2))
        self.vel[mask] = 0
        self.goal[mask] = self.rng.uniform(-1, 1, size=(k, 2))
        self.obst[mask] = self.rng.uniform(-1, 1, size=(k, self.n_obstacles, 2))
        self.t[mask] = 0

    def _rays(self):
        # distance along each ray to the nearest obstacle (radius 0.15), capped at 1
        rel = self.obst[:, None, :, :] - self.pos[:, None, None, :]  # (n, 1, O, 2)
        proj = (rel * self.dirs[None, :, None, :]).sum(-1)  # (n, R, O)
        perp2 = (rel ** 2).sum(-1) - proj ** 2
        hit = (proj > 0) & (perp2 < 0.15 ** 2)
        dist = np.where(hit, proj - np.sqrt(np.maximum(0.15 ** 2 - perp2, 0)), 1.0)
        return np.clip(dist.min(-1), 0, 1)

    def obs(self):
        return np.concatenate([self.pos, self.vel, self.goal - self.pos, self._rays()], 1).astype(np.float32)

    def step(self, action):
        a = np.clip(action, -1, 1)
        self.vel = 0.85 * self.vel + 0.05 * a
        self.pos = np.clip(self.pos + self.vel, -1.2, 1.2)
        d_goal = np.linalg.norm(self.goal - self.pos, axis=1)
        d_obst = np.linalg.norm(self.obst - self.pos[:, None], axis=2).min(1)
        reward = -d_goal - 2.0 * (d_obst < 0.15) - 0.01 * (a ** 2).sum(1)
        self.t += 1
        done = (d_goal < 0.1) | (self.t >= 200)
        reward = reward + 5.0 * (d_goal < 0.1)
        if done.any():
            self._reset(done)
        return self.obs(), reward.astype(np.float32), done


class RolloutBuffer:
    _instances = []

    def __init__(self, n_steps, n_envs, obs_dim, act_dim):
        self.obs = torch.zeros(n_steps, n_envs, obs_dim)
        self.actions = torch.zeros(n_steps, n_envs, act_dim)
        self.log_probs = torch.zeros(n_steps, n_envs)
        self.rewards = torch.zeros(n_steps, n_envs)
        self.dones = torch.zeros(n_steps, n_envs)
        self.values = torch.zeros(n_steps, n_envs)
        self.advantages = torch.zeros(n_steps, n_envs)
        self.returns = torch.zeros(n_steps, n_envs)
        self.ptr = 0
        RolloutBuffer._instances.append(self)

    def nbytes(self):
        return sum(t.numel() * t.element_size() for t in vars(self).values() if torch.is_tensor(t))

    @classmethod
    def total_mb(cls):
        return sum(b.nbytes() for b in cls._instances) / 2 ** 20

    def add(self, obs, action, log_prob, reward, done, value):
        i = self.ptr
        self.obs[i], self.actions[i], self.log_probs[i] = obs, action, log_prob
        self.rewards[i], self.dones[i], self.values[i] = reward, done, value
        self.ptr += 1

    def compute_gae(self, last_value, gamma=0.99, lam=0.95):
        gae = torch.zeros_like(last_value)
        for t in reversed(range(self.ptr)):
            next_v = last_value if t == self.ptr - 1 else self.values[t + 1]
            nonterminal = 1.0 - self.dones[t]
            delta = self.rewards[t] + gamma * next_v * nonterminal - self.values[t]
            gae = delta + gamma * lam * nonterminal * gae
            self.advantages[t] = gae
        self.returns = self.advantages + self.values

    def minibatches(self, size):
        n = self.ptr * self.obs.shape[1]
        flat = lambda x: x[: self.ptr].reshape(n, *x.shape[2:])
        obs, act, lp, adv, ret = map(flat, (self.obs, self.actions, self.log_probs, self.advantages, self.returns))
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        perm = torch.randperm(n)
        for s in range(0, n, size):
            idx = perm[s:s + size]
            yield obs[idx], act[idx], lp[idx], adv[idx], ret[idx]


class GaussianPolicy(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden=64):
        super().__init__()
        self.pi = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                nn.Linear(hidden, act_dim))
        self.v = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.log_std = nn.Parameter(torch.full((act_dim,), -0.5))

    def dist(self, obs):
        return torch.distributions.Normal(self.pi(obs), self.log_std.exp())

    def value(self, obs):
        return self.v(obs).squeeze(-1)


def ppo_update(policy, opt, buf, clip=0.2):
    stats = []
    for _ in range(EPOCHS):
        for obs, act, old_lp, adv, ret in buf.minibatches(MINIBATCH):
            d = policy.dist(obs)
            lp = d.log_prob(act).sum(-1)
            ratio = torch.exp(lp - old_lp)
            pg = -torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv).mean()
            vf = 0.5 * (policy.value(obs) - ret).pow(2).mean()
            ent = d.entropy().sum(-1).mean()
            loss = pg + 0.5 * vf - 0.003 * ent
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            opt.step()
            stats.append(((ratio - 1).abs() > clip).float().mean().item())
    return sum(stats) / len(stats)


def main():
    env = NavEnv(N_ENVS, seed=0)
    policy = GaussianPolicy(NavEnv.obs_dim, 2)
    opt = torch.optim.Adam(policy.parameters(), lr=3e-4)
    obs = torch.from_numpy(env.obs())
    t0 = time.time()
    for update in range(N_UPDATES):
        buf = RolloutBuffer(N_STEPS, N_ENVS, NavEnv.obs_dim, 2)
        ep_reward = 0.0
        with torch.no_grad():
            for _ in range(N_STEPS):
                d = policy.dist(obs)
                action = d.sample()
                value = policy.value(obs)
                next_obs, reward, done = env.step(action.numpy())
                buf.add(obs, action, d.log_prob(action).sum(-1), torch.from_numpy(reward),
                        torch.from_numpy(done.astype(np.float32)), value)
                ep_reward += float(reward.mean())
                obs = torch.from_numpy(next_obs)
            buf.compute_gae(policy.value(obs))
        clip_frac = ppo_update(policy, opt, buf)
        if (update + 1) % 30 == 0:
            print(f"[{time.time() - t0:5.1f}s] update {update + 1:4d}  reward/step={ep_reward / N_STEPS:+.3f}  "
                  f"clip_frac={clip_frac:.3f}  std={math.exp(policy.log_std.mean().item()):.3f}  "
                  f"rollout storage={RolloutBuffer.total_mb():.1f} MB")


if __name__ == "__main__":
    main()
