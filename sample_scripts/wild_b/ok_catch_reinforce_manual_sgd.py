# expect: no_leak
# holder: none
# pattern: REINFORCE with a hand-written SGD update (no optimizer); per-batch log-prob and reward lists are rebuilt after every update (small sawtooth), recent returns and frames live in deque(maxlen=...)
# step_ms: 0.3
"""Policy gradient on the bsuite-style "Catch" game, written from scratch.

A ball falls down a 10x5 grid and the paddle has to catch it. Trajectories of
16 episodes are collected into ``batch_log_probs`` / ``batch_returns`` lists; the
policy is updated by hand (``p -= lr * p.grad``), then the lists are replaced by
new empty lists, which frees the autograd graph of the batch. Statistics are
kept in bounded ``deque`` objects, so memory is flat after the first batches.
"""
import time
from collections import deque
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(42)
rng = np.random.default_rng(42)

ROWS, COLS = 10, 5


class Catch:
    def reset(self):
        self.ball = [0, int(rng.integers(COLS))]
        self.paddle = COLS // 2
        return self.render()

    def render(self):
        board = np.zeros((ROWS, COLS), dtype=np.float32)
        board[self.ball[0], self.ball[1]] = 1.0
        board[ROWS - 1, self.paddle] = 1.0
        return board

    def step(self, action):                 # 0 left, 1 stay, 2 right
        self.paddle = min(max(self.paddle + action - 1, 0), COLS - 1)
        self.ball[0] += 1
        if self.ball[0] == ROWS - 1:
            r = 1.0 if self.ball[1] == self.paddle else -1.0
            return self.render(), r, True
        return self.render(), 0.0, False


policy = nn.Sequential(nn.Flatten(0), nn.Linear(ROWS * COLS, 64), nn.Tanh(), nn.Linear(64, 3))
LR, GAMMA, EPISODES_PER_BATCH = 0.05, 0.99, 16

env = Catch()
recent = deque(maxlen=200)
last_frames = deque(maxlen=ROWS * 4)      # last few episodes, for a GIF
baseline = 0.0
batch_log_probs, batch_returns = [], []

t0 = time.time()
last = t0
steps = episodes = updates = 0
while time.time() - t0 < 17.0:
    obs, done = env.reset(), False
    log_probs, rewards = [], []
    while not done:
        logits = policy(torch.from_numpy(obs))
        dist = torch.distributions.Categorical(logits=logits)
        a = dist.sample()
        log_probs.append(dist.log_prob(a))
        obs, r, done = env.step(int(a))
        rewards.append(r)
        last_frames.append(obs)
        steps += 1
    G, rets = 0.0, []
    for r in reversed(rewards):
        G = r + GAMMA * G
        rets.append(G)
    rets.reverse()
    batch_log_probs.extend(log_probs)
    batch_returns.extend(rets)
    recent.append(rewards[-1])
    episodes += 1

    if episodes % EPISODES_PER_BATCH == 0:
        ret_t = torch.tensor(batch_returns)
        baseline = 0.9 * baseline + 0.1 * ret_t.mean().item()
        loss = -(torch.stack(batch_log_probs) * (ret_t - baseline)).mean()
        policy.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in policy.parameters():
                p -= LR * p.grad
        batch_log_probs, batch_returns = [], []
        updates += 1

    if time.time() - last > 4:
        last = time.time()
        print(f"episodes {episodes} updates {updates} catch-rate {(np.mean(recent) + 1) / 2:.2f} ({last - t0:.1f}s)")

print(f"{episodes} episodes, {steps} steps, {1000 * (time.time() - t0) / steps:.3f} ms/step")
