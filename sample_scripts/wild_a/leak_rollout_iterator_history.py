# expect: leak
# holder: rollouts.episodes|episodes|rolloutsource
# pattern: iterator class used as the data source (RolloutSource.__next__) stores every finished episode - observations, actions and graph-attached log-prob tensors - in self.episodes
# step_ms: 20
"""REINFORCE on a hand-written CartPole, with episodes produced by an iterator class.

RolloutSource is iterated by the training loop; each __next__ plays one episode
with the current policy and returns an Episode.  It also appends the episode to
`self.episodes` so it can report a moving-average return and replay the best
episode later.  The stored Episode objects hold the per-step log-prob tensors
(with their grad_fn chains) plus the observation arrays, so the iterator grows
with every episode even after the policy update has used them.
Fix: keep only summary numbers (len, return) or a deque(maxlen=100) of detached data.
"""
import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn


class CartPole:
    """Classic cart-pole dynamics (Barto, Sutton & Anderson), numpy only."""

    def __init__(self, seed=0, max_steps=200):
        self.rng = np.random.default_rng(seed)
        self.max_steps = max_steps
        self.g, self.mc, self.mp, self.l, self.f, self.tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, size=4)
        self.t = 0
        return self.state.astype(np.float32)

    def step(self, action):
        x, x_dot, th, th_dot = self.state
        force = self.f if action == 1 else -self.f
        cos, sin = math.cos(th), math.sin(th)
        total = self.mc + self.mp
        temp = (force + self.mp * self.l * th_dot ** 2 * sin) / total
        th_acc = (self.g * sin - cos * temp) / (self.l * (4.0 / 3.0 - self.mp * cos ** 2 / total))
        x_acc = temp - self.mp * self.l * th_acc * cos / total
        self.state = np.array([x + self.tau * x_dot, x_dot + self.tau * x_acc,
                               th + self.tau * th_dot, th_dot + self.tau * th_acc])
        self.t += 1
        done = abs(self.state[0]) > 2.4 or abs(self.state[2]) > 0.21 or self.t >= self.max_steps
        return self.state.astype(np.float32), 1.0, done


@dataclass
class Episode:
    observations: list = field(default_factory=list)
    actions: list = field(default_factory=list)
    rewards: list = field(default_factory=list)
    log_probs: list = field(default_factory=list)

    @property
    def ret(self):
        return sum(self.rewards)


class RolloutSource:
    def __init__(self, env, policy, max_episodes):
        self.env = env
        self.policy = policy
        self.max_episodes = max_episodes
        self.episodes = []

    def __iter__(self):
        return self

    def __next__(self):
        if len(self.episodes) >= self.max_episodes:
            raise StopIteration
        ep = Episode()
        obs, done = self.env.reset(), False
        while not done:
            logits = self.policy(torch.from_numpy(obs))
            dist = torch.distributions.Categorical(logits=logits)
            action = dist.sample()
            ep.observations.append(obs)
            ep.actions.append(action.item())
            ep.log_probs.append(dist.log_prob(action))
            obs, r, done = self.env.step(action.item())
            ep.rewards.append(r)
        self.episodes.append(ep)
        return ep

    def moving_return(self, k=20):
        recent = self.episodes[-k:]
        return sum(e.ret for e in recent) / max(1, len(recent))


def discounted(rewards, gamma):
    out, g = [], 0.0
    for r in reversed(rewards):
        g = r + gamma * g
        out.append(g)
    return torch.tensor(out[::-1])


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 2))
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    rollouts = RolloutSource(CartPole(seed=1), policy, max_episodes=480)
    gamma = 0.99
    t0 = time.time()
    last = t0
    for i, ep in enumerate(rollouts):
        returns = discounted(ep.rewards, gamma)
        returns = (returns - returns.mean()) / (returns.std() + 1e-6) if len(returns) > 1 else returns
        loss = -(torch.stack(ep.log_probs) * returns).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if time.time() - last > 3.0:
            print(f"episode {i}  len {len(ep.rewards)}  avg return(20) {rollouts.moving_return():.1f}"
                  f"  ({time.time() - t0:.1f}s)", flush=True)
            last = time.time()
    best = max(rollouts.episodes, key=lambda e: e.ret)
    print(f"best return {best.ret:.0f} over {len(rollouts.episodes)} episodes")


if __name__ == "__main__":
    main()
