# expect: leak
# holder: _subscribers|subscribers|bus
# pattern: REINFORCE on a numpy point-mass navigation env; after each episode the RolloutWorker subscribes functools.partial(self._staleness_probe, traj) to the "policy_updated" event of a process-wide EventBus (classmethods over the class attribute EventBus._subscribers, a defaultdict(list)) so that the next policy version can report how stale the trajectory was; the probe ignores later versions but is never unsubscribed, so EventBus._subscribers keeps one partial (holding the trajectory's obs/action numpy arrays) per episode (Adam)
# step_ms: 90
"""Policy-gradient agent for a 2-D point-mass reaching task.

The environment is a point with velocity in a box; every episode a goal
and a few repulsive obstacles are placed at random.  Observations are the
position, velocity, goal vector and a coarse 16x16 "lidar" occupancy grid.
The policy is a Gaussian MLP trained with REINFORCE + a learned baseline.

Components talk through a tiny event bus (``episode_end``,
``policy_updated``) so that logging and diagnostics stay out of the
training loop.  One diagnostic measures off-policy drift: when the next
policy version is published, we re-score the last trajectory with it and
log the mean log-ratio.
"""
import functools
import time
from collections import defaultdict

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(0)

LIDAR = 16
OBS_DIM = 2 + 2 + 2 + LIDAR * LIDAR
ACT_DIM = 2
EP_LEN = 120
EPISODES = 260


class EventBus:
    """Process-wide pub/sub; used through the class itself, never instantiated."""
    _subscribers = defaultdict(list)

    @classmethod
    def subscribe(cls, event, fn):
        cls._subscribers[event].append(fn)
        return fn

    @classmethod
    def unsubscribe(cls, event, fn):
        cls._subscribers[event].remove(fn)

    @classmethod
    def emit(cls, event, **payload):
        for fn in list(cls._subscribers[event]):
            fn(**payload)


class PointMassEnv:
    def __init__(self, rng):
        self.rng = rng

    def reset(self):
        self.pos = self.rng.uniform(-1, 1, 2)
        self.vel = np.zeros(2)
        self.goal = self.rng.uniform(-1, 1, 2)
        self.obstacles = self.rng.uniform(-1, 1, (4, 2))
        return self._obs()

    def _lidar(self):
        g = np.linspace(-1, 1, LIDAR)
        gx, gy = np.meshgrid(g, g)
        cells = np.stack([gx.ravel(), gy.ravel()], 1) + self.pos * 0.25
        d = np.linalg.norm(cells[:, None, :] - self.obstacles[None], axis=-1).min(1)
        return np.exp(-4 * d)

    def _obs(self):
        return np.concatenate([self.pos, self.vel, self.goal - self.pos, self._lidar()]).astype(np.float32)

    def step(self, a):
        a = np.clip(a, -1, 1)
        push = np.zeros(2)
        for o in self.obstacles:
            diff = self.pos - o
            push += diff / (np.dot(diff, diff) + 0.05) * 0.01
        self.vel = 0.9 * self.vel + 0.05 * a + push
        self.pos = np.clip(self.pos + self.vel, -1.2, 1.2)
        dist = np.linalg.norm(self.goal - self.pos)
        reward = -dist - 0.01 * float(np.dot(a, a))
        return self._obs(), reward, dist < 0.05


class GaussianPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS_DIM, 128), nn.Tanh(), nn.Linear(128, 64), nn.Tanh())
        self.mu = nn.Linear(64, ACT_DIM)
        self.value = nn.Linear(64, 1)
        self.log_std = nn.Parameter(torch.full((ACT_DIM,), -0.5))

    def dist(self, obs):
        h = self.body(obs)
        return torch.distributions.Normal(self.mu(h), self.log_std.exp()), self.value(h).squeeze(-1)


class RolloutWorker:
    def __init__(self, env, policy, bus):
        self.env, self.policy, self.bus = env, policy, bus
        self.version = 0
        bus.subscribe("policy_updated", self._on_policy_updated)

    def _on_policy_updated(self, version, **_):
        self.version = version

    def _staleness_probe(self, traj, version, policy, **_):
        if version != traj["version"] + 1:
            return
        with torch.no_grad():
            d, _ = policy.dist(torch.from_numpy(traj["obs"]))
            new_lp = d.log_prob(torch.from_numpy(traj["act"])).sum(-1).numpy()
        self.bus.emit("metric", name="log_ratio", value=float(np.mean(new_lp - traj["logp"])))

    def collect(self):
        obs_buf = np.zeros((EP_LEN, OBS_DIM), np.float32)
        act_buf = np.zeros((EP_LEN, ACT_DIM), np.float32)
        logp_buf = np.zeros(EP_LEN, np.float32)
        rew_buf = np.zeros(EP_LEN, np.float32)
        o = self.env.reset()
        T = EP_LEN
        for t in range(EP_LEN):
            with torch.no_grad():
                d, _ = self.policy.dist(torch.from_numpy(o))
                a = d.sample()
                logp_buf[t] = d.log_prob(a).sum().item()
            obs_buf[t], act_buf[t] = o, a.numpy()
            o, r, done = self.env.step(act_buf[t].astype(np.float64))
            rew_buf[t] = r
            if done:
                T = t + 1
                break
        traj = {"obs": obs_buf[:T], "act": act_buf[:T], "logp": logp_buf[:T], "rew": rew_buf[:T],
                "version": self.version}
        self.bus.subscribe("policy_updated", functools.partial(self._staleness_probe, traj))
        self.bus.emit("episode_end", ret=float(rew_buf[:T].sum()), length=T)
        return traj


def returns_to_go(rew, gamma=0.99):
    out = np.zeros_like(rew)
    acc = 0.0
    for t in range(len(rew) - 1, -1, -1):
        acc = rew[t] + gamma * acc
        out[t] = acc
    return out


def main():
    bus = EventBus
    stats = defaultdict(list)
    bus.subscribe("episode_end", lambda ret, length: stats["ret"].append(ret))
    bus.subscribe("metric", lambda name, value: stats[name].append(value))

    policy = GaussianPolicy()
    opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
    worker = RolloutWorker(PointMassEnv(np.random.default_rng(0)), policy, bus)

    t0 = time.time()
    for ep in range(EPISODES):
        traj = worker.collect()
        obs = torch.from_numpy(traj["obs"])
        act = torch.from_numpy(traj["act"])
        ret = torch.from_numpy(returns_to_go(traj["rew"]))
        d, v = policy.dist(obs)
        adv = (ret - v).detach()
        adv = (adv - adv.mean()) / (adv.std() + 1e-6) if len(adv) > 1 else adv
        loss = -(d.log_prob(act).sum(-1) * adv).mean() + 0.5 * (ret - v).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
        opt.step()
        bus.emit("policy_updated", version=worker.version + 1, policy=policy)

        if ep % 20 == 0 or ep == EPISODES - 1:
            recent = stats["ret"][-20:]
            lr_ = stats["log_ratio"][-20:]
            print(f"episode {ep:4d}  return {np.mean(recent):8.2f}  log-ratio {np.mean(lr_) if lr_ else 0:+.4f}  "
                  f"({time.time() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
