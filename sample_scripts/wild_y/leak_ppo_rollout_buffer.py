# expect: leak
# holder: buffer.logp|buffer.values|RolloutBuffer|CopySlices
# pattern: PPO (clipped surrogate + GAE, torch.optim.Adam) on a hand-written vectorised CartPole (32 envs in NumPy), code in main() + PPOAgent/RolloutBuffer classes; one loop iteration = one 32-step rollout plus 10 epochs of 8 minibatch updates (~100 ms). The rollout buffer is preallocated once as fixed-size torch tensors (T x N) and reused every iteration, so it looks bounded. But PPOAgent.act() is not wrapped in torch.no_grad(), and the rollout writes the graph-attached log-prob and value with `buf.logp[t] = logp` / `buf.values[t] = value`; an in-place copy of a tensor that requires grad into a view makes the buffer itself require grad and records a CopySlices node whose history edge points to the buffer's previous grad_fn. The update only ever reads buf.logp.detach() / buf.values.detach(), so nothing backpropagates through that history: the CopySlices chain on the two buffers grows by 32 CopySlices nodes per buffer per iteration (~2 MB) and keeps every rollout step's policy/value forward graph (saved activations of the MLPs) alive for the whole run, although the buffer's own storage never grows.
# step_ms: 100
"""PPO on a vectorised CartPole with a preallocated torch rollout buffer.

The rollout buffer is allocated once and overwritten every iteration
(SpinningUp-style PPOBuffer, but with torch tensors so GAE and the update
can stay on the tensor side).
"""
import math
import time

import numpy as np
import psutil
import torch
import torch.nn as nn
import torch.nn.functional as F


def rss_mb():
    return psutil.Process().memory_info().rss / 2**20


class VecCartPole:
    """Classic cart-pole dynamics for N environments at once (NumPy)."""

    def __init__(self, n, seed=0, max_steps=500):
        self.n = n
        self.rng = np.random.default_rng(seed)
        self.max_steps = max_steps
        self.gravity, self.masscart, self.masspole = 9.8, 1.0, 0.1
        self.total_mass = self.masscart + self.masspole
        self.length, self.force_mag, self.tau = 0.5, 10.0, 0.02
        self.polemass_length = self.masspole * self.length
        self.state = np.zeros((n, 4))
        self.t = np.zeros(n, dtype=np.int64)
        self.reset_all()

    def reset_all(self):
        self.state = self.rng.uniform(-0.05, 0.05, size=(self.n, 4))
        self.t[:] = 0
        return self.state.astype(np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state.T
        force = np.where(action == 1, self.force_mag, -self.force_mag)
        costheta, sintheta = np.cos(theta), np.sin(theta)
        temp = (force + self.polemass_length * theta_dot**2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta**2 / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        self.state = np.stack([x, x_dot, theta, theta_dot], axis=1)
        self.t += 1
        failed = (np.abs(x) > 2.4) | (np.abs(theta) > 12 * 2 * math.pi / 360)
        truncated = self.t >= self.max_steps
        done = failed | truncated
        reward = np.ones(self.n, dtype=np.float32)
        if done.any():
            k = int(done.sum())
            self.state[done] = self.rng.uniform(-0.05, 0.05, size=(k, 4))
            self.t[done] = 0
        return self.state.astype(np.float32), reward, done


class ActorCritic(nn.Module):
    def __init__(self, obs_dim=4, n_actions=2, hidden=64):
        super().__init__()
        self.pi = nn.Sequential(
            nn.Linear(obs_dim, hidden), nn.Tanh(),
            nn.Linear(hidden, hidden), nn.Tanh(),
            nn.Linear(hidden, n_actions),
        )
        self.v = nn.Sequential(
            nn.Linear(obs_dim, hidden), nn.Tanh(),
            nn.Linear(hidden, hidden), nn.Tanh(),
            nn.Linear(hidden, 1),
        )

    def forward(self, obs):
        return self.pi(obs), self.v(obs).squeeze(-1)


class RolloutBuffer:
    """Fixed-size storage, allocated once and reused for every rollout."""

    def __init__(self, T, N, obs_dim):
        self.T, self.N = T, N
        self.obs = torch.zeros(T, N, obs_dim)
        self.actions = torch.zeros(T, N, dtype=torch.long)
        self.logp = torch.zeros(T, N)
        self.values = torch.zeros(T, N)
        self.rewards = torch.zeros(T, N)
        self.dones = torch.zeros(T, N)
        self.advantages = torch.zeros(T, N)
        self.returns = torch.zeros(T, N)

    def store(self, t, obs, action, logp, value, reward, done):
        self.obs[t] = obs
        self.actions[t] = action
        self.logp[t] = logp
        self.values[t] = value
        self.rewards[t] = reward
        self.dones[t] = done

    def finish(self, last_value, gamma=0.99, lam=0.95):
        values = self.values.detach()
        last_gae = torch.zeros(self.N)
        for t in reversed(range(self.T)):
            next_value = last_value if t == self.T - 1 else values[t + 1]
            nonterminal = 1.0 - self.dones[t]
            delta = self.rewards[t] + gamma * next_value * nonterminal - values[t]
            last_gae = delta + gamma * lam * nonterminal * last_gae
            self.advantages[t] = last_gae
        self.returns.copy_(self.advantages + values)

    def minibatches(self, n_mb, generator):
        flat = self.T * self.N
        perm = torch.randperm(flat, generator=generator)
        obs = self.obs.reshape(flat, -1)
        act = self.actions.reshape(flat)
        old_logp = self.logp.detach().reshape(flat)
        adv = self.advantages.reshape(flat)
        ret = self.returns.reshape(flat)
        for idx in perm.chunk(n_mb):
            a = adv[idx]
            yield obs[idx], act[idx], old_logp[idx], (a - a.mean()) / (a.std() + 1e-8), ret[idx]


class PPOAgent:
    def __init__(self, lr=3e-4, clip=0.2, epochs=10, n_minibatches=8, seed=0):
        self.net = ActorCritic()
        self.opt = torch.optim.Adam(self.net.parameters(), lr=lr, eps=1e-5)
        self.clip, self.epochs, self.n_mb = clip, epochs, n_minibatches
        self.gen = torch.Generator().manual_seed(seed)

    def act(self, obs):
        logits, value = self.net(obs)
        dist = torch.distributions.Categorical(logits=logits)
        action = dist.sample()
        return action, dist.log_prob(action), value

    def value(self, obs):
        with torch.no_grad():
            return self.net.v(obs).squeeze(-1)

    def update(self, buf):
        stats = []
        for _ in range(self.epochs):
            for obs, act, old_logp, adv, ret in buf.minibatches(self.n_mb, self.gen):
                logits, value = self.net(obs)
                dist = torch.distributions.Categorical(logits=logits)
                logp = dist.log_prob(act)
                ratio = torch.exp(logp - old_logp)
                pg = -torch.min(ratio * adv, ratio.clamp(1 - self.clip, 1 + self.clip) * adv).mean()
                vf = F.mse_loss(value, ret)
                ent = dist.entropy().mean()
                loss = pg + 0.5 * vf - 0.01 * ent
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(self.net.parameters(), 0.5)
                self.opt.step()
                stats.append((pg.item(), vf.item(), ent.item()))
        return np.mean(stats, axis=0)


def main():
    torch.set_num_threads(1)   # tiny nets: intra-op threads only add overhead
    torch.manual_seed(0)
    np.random.seed(0)
    n_envs, horizon, iterations = 32, 32, 140
    env = VecCartPole(n_envs, seed=0)
    agent = PPOAgent(seed=0)
    buf = RolloutBuffer(horizon, n_envs, 4)

    obs = torch.from_numpy(env.reset_all())
    ep_ret = np.zeros(n_envs)
    finished = []
    print(f"start: rss={rss_mb():.1f} MB")
    t0 = time.time()
    for it in range(1, iterations + 1):
        for t in range(horizon):
            action, logp, value = agent.act(obs)
            next_obs, reward, done = env.step(action.numpy())
            buf.store(t, obs, action, logp, value,
                      torch.from_numpy(reward), torch.from_numpy(done.astype(np.float32)))
            ep_ret += reward
            for i in np.flatnonzero(done):
                finished.append(ep_ret[i])
                ep_ret[i] = 0.0
            finished = finished[-100:]
            obs = torch.from_numpy(next_obs)
        buf.finish(agent.value(obs))
        pg, vf, ent = agent.update(buf)
        if it % 10 == 0 or it == 1:
            mean_ret = np.mean(finished) if finished else 0.0
            print(f"iter {it:3d}  return(100)={mean_ret:7.1f}  pg={pg:+.3f} vf={vf:.3f} "
                  f"ent={ent:.3f}  {1000 * (time.time() - t0) / it:.0f} ms/iter  rss={rss_mb():.1f} MB")
    print(f"end: rss={rss_mb():.1f} MB  wall={time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
