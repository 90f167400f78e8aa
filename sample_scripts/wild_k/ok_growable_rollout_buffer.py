# expect: no_leak
# pattern: actor-critic rollouts go into a vector-style RolloutBuffer (numpy arrays with doubling capacity, reset() only sets n=0 and keeps the arrays); a time-limit curriculum lengthens episodes every iteration up to a cap of 320 steps, so the buffer's filled high-water mark and capacity grow for the first third of the run and then the same arrays are reused
# step_ms: 3
"""Advantage actor-critic on a pixel "chase the target" task with 16 vectorised envs.

Observations are 2x32x32 renderings (agent blob, target blob).  Episodes end
at a time limit that follows a curriculum (short episodes first).  Rollouts
are written into a growable buffer that is reused across iterations.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

N_ENVS, RES = 16, 32
MOVES = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], np.float32) * 0.06


class ChaseEnv:
    def __init__(self, n, rng):
        self.n, self.rng = n, rng
        g = (np.arange(RES, dtype=np.float32) + 0.5) / RES
        self.yy, self.xx = np.meshgrid(g, g, indexing="ij")

    def reset(self):
        self.agent = self.rng.uniform(0.1, 0.9, (self.n, 2)).astype(np.float32)
        self.target = self.rng.uniform(0.1, 0.9, (self.n, 2)).astype(np.float32)
        self.vel = self.rng.normal(0, 0.01, (self.n, 2)).astype(np.float32)
        return self.render()

    def render(self):
        def blob(p):
            return np.exp(-((self.xx[None] - p[:, 0, None, None]) ** 2 +
                            (self.yy[None] - p[:, 1, None, None]) ** 2) / 0.004)
        return np.stack([blob(self.agent), blob(self.target)], 1).astype(np.float32)

    def step(self, actions):
        self.agent = np.clip(self.agent + MOVES[actions], 0, 1)
        self.target = self.target + self.vel
        bounce = (self.target < 0.05) | (self.target > 0.95)
        self.vel[bounce] *= -1
        self.target = np.clip(self.target, 0.05, 0.95)
        dist = np.linalg.norm(self.agent - self.target, axis=1)
        return self.render(), -dist


class RolloutBuffer:
    """Append-only within an iteration; capacity doubles when needed, reset() keeps the arrays."""

    def __init__(self, obs_shape, capacity=512):
        self.obs_shape = obs_shape
        self.capacity = 0
        self.n = 0
        self._alloc(capacity)

    def _alloc(self, capacity):
        fields = {"obs": (np.float32, self.obs_shape), "act": (np.int64, ()), "rew": (np.float32, ()),
                  "val": (np.float32, ()), "logp": (np.float32, ()), "env": (np.int64, ()), "t": (np.int64, ())}
        new = {k: np.empty((capacity,) + shape, dtype) for k, (dtype, shape) in fields.items()}
        for k in new:
            if self.n:
                new[k][: self.n] = getattr(self, k)[: self.n]
            setattr(self, k, new[k])
        self.capacity = capacity

    def add_batch(self, t, obs, act, rew, val, logp):
        m = obs.shape[0]
        if self.n + m > self.capacity:
            self._alloc(max(2 * self.capacity, self.n + m))
        s = slice(self.n, self.n + m)
        self.obs[s], self.act[s], self.rew[s], self.val[s], self.logp[s] = obs, act, rew, val, logp
        self.env[s], self.t[s] = np.arange(m), t
        self.n += m

    def reset(self):
        self.n = 0

    def returns_advantages(self, gamma=0.97, lam=0.95):
        T = self.n // N_ENVS
        rew = self.rew[: self.n].reshape(T, N_ENVS)
        val = self.val[: self.n].reshape(T, N_ENVS)
        adv = np.zeros_like(rew)
        last = np.zeros(N_ENVS, np.float32)
        for t in reversed(range(T)):
            nxt = val[t + 1] if t + 1 < T else val[t]
            delta = rew[t] + gamma * nxt - val[t]
            last = delta + gamma * lam * last
            adv[t] = last
        return (adv + val).reshape(-1), adv.reshape(-1)


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(2, 8, 4, stride=2, padding=1)
        self.c2 = nn.Conv2d(8, 16, 4, stride=2, padding=1)
        self.fc = nn.Linear(16 * 8 * 8, 64)
        self.pi = nn.Linear(64, len(MOVES))
        self.v = nn.Linear(64, 1)

    def forward(self, x):
        h = F.relu(self.c2(F.relu(self.c1(x))))
        h = F.relu(self.fc(h.flatten(1)))
        return self.pi(h), self.v(h).squeeze(-1)


def time_limit(iteration):
    return min(40 + 24 * iteration, 320)


def main():
    rng = np.random.default_rng(8)
    torch.manual_seed(8)
    env = ChaseEnv(N_ENVS, rng)
    net = ActorCritic()
    opt = torch.optim.Adam(net.parameters(), lr=7e-4)
    buf = RolloutBuffer((2, RES, RES))
    t0 = time.time()
    n_iters = 26
    for it in range(n_iters):
        buf.reset()
        obs = env.reset()
        limit = time_limit(it)
        for t in range(limit):
            with torch.no_grad():
                logits, value = net(torch.from_numpy(obs))
                dist = torch.distributions.Categorical(logits=logits)
                act = dist.sample()
            nxt, rew = env.step(act.numpy())
            buf.add_batch(t, obs, act.numpy(), rew, value.numpy(), dist.log_prob(act).numpy())
            obs = nxt
        ret, adv = buf.returns_advantages()
        adv = (adv - adv.mean()) / (adv.std() + 1e-6)
        perm = rng.permutation(buf.n)
        for mb in np.array_split(perm, max(1, buf.n // 512)):
            logits, value = net(torch.from_numpy(buf.obs[mb]))
            logp = F.log_softmax(logits, -1).gather(1, torch.from_numpy(buf.act[mb])[:, None]).squeeze(1)
            ent = -(F.softmax(logits, -1) * F.log_softmax(logits, -1)).sum(-1).mean()
            loss = (-(logp * torch.from_numpy(adv[mb])).mean()
                    + 0.5 * F.mse_loss(value, torch.from_numpy(ret[mb])) - 0.01 * ent)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), 0.5)
            opt.step()
        mean_dist = -buf.rew[: buf.n].mean()
        if it % 3 == 2:
            print(f"iter {it + 1:3d}  time limit {limit:3d}  transitions {buf.n:5d}  capacity {buf.capacity:5d}  "
                  f"mean dist {mean_dist:.3f}  {time.time() - t0:.1f}s", flush=True)
    print(f"done: {n_iters} iterations, buffer capacity {buf.capacity}, last mean dist {mean_dist:.3f}, "
          f"{time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
