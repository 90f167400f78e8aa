# expect: leak
# holder: agent.history
"""A tiny policy-gradient agent on a toy bandit-like environment.

`Agent.history` records every transition of every episode "for debugging",
on an object that lives as long as training. Nothing ever trims it.
Fix: keep the last N with `collections.deque(maxlen=N)` or clear it per episode.
"""

import argparse
import random

import torch
from torch import nn
from torch.distributions import Categorical


class ToyEnv:
    """Observation: a noisy one-hot of the rewarding arm; episodes of 20 steps."""

    def __init__(self, n_arms=6, obs_dim=64, seed=0):
        self.n_arms, self.obs_dim = n_arms, obs_dim
        self.rng = random.Random(seed)
        self.t = 0
        self.good = 0

    def reset(self):
        self.t = 0
        self.good = self.rng.randrange(self.n_arms)
        return self._obs()

    def _obs(self):
        o = torch.randn(self.obs_dim) * 0.3
        o[self.good] += 1.0
        return o

    def step(self, action):
        self.t += 1
        reward = 1.0 if action == self.good else -0.1
        return self._obs(), reward, self.t >= 20


class Agent:
    def __init__(self, obs_dim, n_arms):
        self.policy = nn.Sequential(nn.Linear(obs_dim, 128), nn.ReLU(), nn.Linear(128, n_arms))
        self.opt = torch.optim.Adam(self.policy.parameters(), lr=1e-3)
        self.history = []  # every transition ever seen

    def act(self, obs):
        dist = Categorical(logits=self.policy(obs))
        a = dist.sample()
        return int(a), dist.log_prob(a)

    def learn(self, log_probs, rewards):
        returns = torch.tensor(rewards).flip(0).cumsum(0).flip(0)
        loss = -(torch.stack(log_probs) * (returns - returns.mean())).sum()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300, help="episodes (one update each)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    env, agent = ToyEnv(), Agent(64, 6)
    for episode in range(args.steps):
        obs, done = env.reset(), False
        log_probs, rewards = [], []
        while not done:
            action, lp = agent.act(obs)
            next_obs, reward, done = env.step(action)
            agent.history.append(
                {
                    "episode": episode,
                    "obs": obs,
                    "action": action,
                    "reward": reward,
                    "next_obs": next_obs,
                    "done": done,
                }
            )
            log_probs.append(lp)
            rewards.append(reward)
            obs = next_obs
        agent.learn(log_probs, rewards)
        if episode % 50 == 0:
            print(f"episode {episode} return {sum(rewards):.1f} history={len(agent.history)}")


if __name__ == "__main__":
    main()
