# expect: leak
# holder: stats.mean|stats.var
"""Value-function regression with a running normaliser for monitoring.

`RunningStats.update` keeps an exponential moving average of the value head's
predictions for the progress log. The predictions are not detached, so each
update chains onto the last one: the running mean is the root of a graph that
holds every step's forward activations. Fix: `self.update(pred.detach())`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import torch
from torch import nn


@dataclass
class RunningStats:
    momentum: float = 0.99
    mean: torch.Tensor = field(default_factory=lambda: torch.zeros(()))
    var: torch.Tensor = field(default_factory=lambda: torch.ones(()))

    def update(self, values: torch.Tensor) -> None:
        m = self.momentum
        batch_mean = values.mean()
        batch_var = values.var(unbiased=False)
        self.mean = m * self.mean + (1 - m) * batch_mean
        self.var = m * self.var + (1 - m) * batch_var

    def describe(self) -> str:
        return f"mean={self.mean.item():+.3f} std={self.var.sqrt().item():.3f}"


class ValueNet(nn.Module):
    def __init__(self, obs_dim: int = 32, hidden: int = 256) -> None:
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh()
        )
        self.value = nn.Linear(hidden, 1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.value(self.trunk(obs)).squeeze(-1)


def fake_rollout(rng: torch.Generator, n: int, obs_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    obs = torch.randn(n, obs_dim, generator=rng)
    returns = obs[:, :4].sum(dim=1) * 0.3 + torch.randn(n, generator=rng) * 0.1
    return obs, returns


def train(steps: int) -> None:
    rng = torch.Generator().manual_seed(3)
    torch.manual_seed(3)
    net = ValueNet()
    opt = torch.optim.Adam(net.parameters(), lr=3e-4)
    stats = RunningStats()
    for it in range(steps):
        obs, ret = fake_rollout(rng, 128, 32)
        pred = net(obs)
        loss = 0.5 * (pred - ret).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        stats.update(pred)  # BUG: should be pred.detach()
        if it % 100 == 0:
            print(f"iter {it:5d} value loss {loss.item():.4f} preds {stats.describe()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=700)
    torch.set_num_threads(1)
    train(parser.parse_args().steps)
