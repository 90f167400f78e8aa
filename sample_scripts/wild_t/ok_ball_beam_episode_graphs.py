# expect: no_leak
# pattern: REINFORCE on a hand-written, vectorised ball-and-beam balancing environment (256 envs in numpy, policy MLP, torch.optim.Adam, module top level, ~0.75 ms per environment step); each rollout keeps the per-step log-prob/entropy tensors (with the policy's autograd graph) in rollout-local lists until 90% of the envs have dropped their ball or MAX_T=600 steps are reached, then backpropagates once and rebinds the lists; as the policy learns to balance, rollouts get longer, so the graph held at the end of each rollout (and the peak RSS) grows during the first ~45% of the run and then stays at the MAX_T cap: a sawtooth whose peak rises and then levels off; only floats are kept between rollouts
# step_ms: 0.75
"""Ball-and-beam balancing with vectorised REINFORCE.

A ball rolls on a beam whose tilt angle is driven by a motor (three discrete
actions: motor down / off / up, the beam follows with some lag).  The episode ends when the ball falls
off either end.  256 environments are simulated in lock-step with numpy;
returns are normalised per time step across the batch.
"""
import time

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)

N_ENVS = 256
MAX_T = 600
GAMMA = 0.99
RUN_SECONDS = 16.0
LR = 2e-4
MIN_ALIVE = 0.1  # stop a rollout once 90% of the balls are gone


class BallBeam:
    g = 9.81
    dt = 0.03
    half_length = 1.0

    def __init__(self, n, seed):
        self.n = n
        self.rng = np.random.default_rng(seed)
        self.state = np.zeros((n, 4))

    def reset(self):
        self.state = np.column_stack([
            self.rng.uniform(-0.5, 0.5, self.n), self.rng.uniform(-0.3, 0.3, self.n),
            self.rng.uniform(-0.1, 0.1, self.n), np.zeros(self.n)])
        return self.state.astype(np.float32)

    def step(self, action):
        x, v, th, om = self.state.T
        om = 0.7 * om + 0.3 * (action - 1).astype(np.float64) * 3.0
        th = np.clip(th + om * self.dt, -0.5, 0.5)
        a = (5.0 / 7.0) * self.g * np.sin(th) + self.rng.normal(0, 0.5, self.n)
        v = v + a * self.dt
        x = x + v * self.dt
        self.state = np.column_stack([x, v, th, om])
        fell = np.abs(x) > self.half_length
        reward = 1.0 - 0.5 * np.abs(x)
        return self.state.astype(np.float32), reward.astype(np.float32), fell


torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(4, 96), nn.Tanh(), nn.Linear(96, 96), nn.Tanh(), nn.Linear(96, 3))
opt = torch.optim.Adam(policy.parameters(), lr=LR)
env = BallBeam(N_ENVS, seed=0)
scale = torch.tensor([1.0, 1.0, 4.0, 0.5])

t0 = time.time()
iteration = 0
total_steps = 0
history = []
while time.time() - t0 < RUN_SECONDS:
    iteration += 1
    obs = env.reset()
    alive = np.ones(N_ENVS, bool)
    logps, ents, rewards, masks = [], [], [], []
    t = 0
    while alive.mean() > MIN_ALIVE and t < MAX_T:
        logits = policy(torch.from_numpy(obs) * scale)
        dist = torch.distributions.Categorical(logits=logits)
        act = dist.sample()
        logps.append(dist.log_prob(act))
        ents.append(dist.entropy())
        obs, r, fell = env.step(act.numpy())
        masks.append(torch.from_numpy(alive.astype(np.float32)))
        rewards.append(torch.from_numpy(r * alive))
        alive &= ~fell
        t += 1
    total_steps += t

    R = torch.zeros(N_ENVS)
    returns = []
    for r, m in zip(reversed(rewards), reversed(masks)):
        R = r + GAMMA * R * m
        returns.append(R)
    returns = torch.stack(returns[::-1])
    mask = torch.stack(masks)
    mean = (returns * mask).sum(1, keepdim=True) / mask.sum(1, keepdim=True).clamp(min=1)
    adv = (returns - mean) * mask
    adv = adv / (adv.pow(2).sum() / mask.sum()).sqrt().clamp(min=1e-6)
    logp = torch.stack(logps)
    ent = torch.stack(ents)
    loss = -(logp * adv).sum() / mask.sum() - 0.01 * (ent * mask).sum() / mask.sum()
    opt.zero_grad()
    loss.backward()
    opt.step()

    ep_len = mask.sum(0).mean().item()
    history.append((t, ep_len))
    if iteration % 5 == 0:
        el = time.time() - t0
        print(f"iter {iteration:4d}  rollout steps {t:4d}  mean episode length {ep_len:6.1f}  "
              f"loss {loss.item():7.4f}  {1000 * el / total_steps:.2f} ms/env-step  ({el:.1f}s)")

capped = sum(1 for t, _ in history if t == MAX_T)
print(f"{iteration} rollouts, {total_steps} vector steps in {time.time() - t0:.1f}s; "
      f"{capped} rollouts hit the {MAX_T}-step limit")
