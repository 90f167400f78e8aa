# expect: no_leak
# pattern: preallocated numpy ring buffer (np.zeros, pages touched as it fills) for DQN replay; RSS rises until the buffer wraps, then flat; target net synced by load_state_dict
# step_ms: 4
"""DQN on a vectorised 'light-seeking robot' grid task with a fixed-capacity replay ring buffer.

ReplayBuffer preallocates its arrays with np.zeros, so the OS only backs the
pages as transitions are written: RSS climbs for the first few seconds until
the write pointer wraps, then stays flat (old transitions are overwritten in
place).  The target network is refreshed with load_state_dict (copy into the
existing tensors), and episode returns are kept as plain floats.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class ReplayBuffer:
    def __init__(self, capacity, obs_dim):
        self.capacity = capacity
        self.obs = np.zeros((capacity, obs_dim), dtype=np.float32)
        self.next_obs = np.zeros((capacity, obs_dim), dtype=np.float32)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.dones = np.zeros(capacity, dtype=np.float32)
        self.ptr = 0
        self.size = 0

    def add_batch(self, obs, actions, rewards, next_obs, dones):
        n = obs.shape[0]
        idx = (self.ptr + np.arange(n)) % self.capacity
        self.obs[idx] = obs
        self.actions[idx] = actions
        self.rewards[idx] = rewards
        self.next_obs[idx] = next_obs
        self.dones[idx] = dones
        self.ptr = (self.ptr + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, batch_size, rng):
        idx = rng.integers(0, self.size, batch_size)
        return (torch.from_numpy(self.obs[idx]), torch.from_numpy(self.actions[idx]),
                torch.from_numpy(self.rewards[idx]), torch.from_numpy(self.next_obs[idx]),
                torch.from_numpy(self.dones[idx]))


class LightGrid:
    """N parallel agents on a 12x12 grid; observation = local 'light field' patch + position."""

    def __init__(self, n_envs, size=12, seed=0):
        self.n, self.size = n_envs, size
        self.rng = np.random.default_rng(seed)
        yy, xx = np.mgrid[0:size, 0:size]
        self.field = np.exp(-((yy - 9) ** 2 + (xx - 9) ** 2) / 18.0).astype(np.float32)
        self.pad = np.pad(self.field, 4)
        self.moves = np.array([[0, 1], [1, 0], [0, -1], [-1, 0]])
        self.reset_all()

    @property
    def obs_dim(self):
        return 9 * 9 + 2

    def reset_all(self):
        self.pos = self.rng.integers(0, self.size, (self.n, 2))
        self.t = np.zeros(self.n, dtype=np.int64)

    def observe(self):
        patches = np.stack([self.pad[y:y + 9, x:x + 9].ravel() for y, x in self.pos])
        return np.concatenate([patches, self.pos / self.size], axis=1).astype(np.float32)

    def step(self, actions):
        self.pos = np.clip(self.pos + self.moves[actions], 0, self.size - 1)
        self.t += 1
        reward = self.field[self.pos[:, 0], self.pos[:, 1]] - 0.01
        done = (reward > 0.9) | (self.t >= 60)
        next_obs = self.observe()
        if done.any():
            k = done.sum()
            self.pos[done] = self.rng.integers(0, self.size, (k, 2))
            self.t[done] = 0
        return next_obs, reward.astype(np.float32), done.astype(np.float32)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    env = LightGrid(n_envs=32)
    q = nn.Sequential(nn.Linear(env.obs_dim, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 4))
    target = nn.Sequential(nn.Linear(env.obs_dim, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 4))
    target.load_state_dict(q.state_dict())
    opt = torch.optim.Adam(q.parameters(), lr=5e-4)
    buf = ReplayBuffer(capacity=40_000, obs_dim=env.obs_dim)

    gamma, steps = 0.97, 5000
    obs = env.observe()
    recent_reward = []
    t0 = time.time()
    for step in range(1, steps + 1):
        eps = max(0.05, 1.0 - step / 2500)
        with torch.no_grad():
            greedy = q(torch.from_numpy(obs)).argmax(1).numpy()
        explore = rng.random(env.n) < eps
        actions = np.where(explore, rng.integers(0, 4, env.n), greedy)
        next_obs, rew, done = env.step(actions)
        buf.add_batch(obs, actions, rew, next_obs, done)
        obs = next_obs
        recent_reward.append(float(rew.mean()))

        if buf.size >= 1000:
            o, a, r, o2, d = buf.sample(256, rng)
            with torch.no_grad():
                tgt = r + gamma * (1 - d) * target(o2).max(1).values
            pred = q(o).gather(1, a[:, None]).squeeze(1)
            loss = F.smooth_l1_loss(pred, tgt)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if step % 200 == 0:
            target.load_state_dict(q.state_dict())
        if step % 1000 == 0:
            print(f"step {step}  eps {eps:.2f}  mean reward {np.mean(recent_reward):.3f}  buffer {buf.size}"
                  f"  ({time.time() - t0:.1f}s)", flush=True)
            recent_reward.clear()


if __name__ == "__main__":
    main()
