# expect: no_leak
# holder: none
# pattern: DQN replay buffer is a preallocated numpy ring buffer (np.zeros pages are touched as it fills, so RSS climbs until the first wrap-around and then stays flat)
# step_ms: 1.5
"""DQN on an inline 12x12 Snake environment with a ring-buffer replay memory.

``ReplayBuffer`` preallocates fixed-size numpy arrays and overwrites the oldest
slot once ``ptr`` wraps around. Because ``np.zeros`` memory is only backed by
physical pages when written, RSS rises while the buffer fills for the first time
(first few seconds) and is flat afterwards.
"""
import random
import time
from collections import deque
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
random.seed(0)
np.random.seed(0)
torch.manual_seed(0)

G = 12
MOVES = [(-1, 0), (0, 1), (1, 0), (0, -1)]


class SnakeEnv:
    def __init__(self, max_steps=300):
        self.max_steps = max_steps

    def reset(self):
        self.snake = deque([(G // 2, G // 2)])
        self.dir = 1
        self.t = 0
        self._place_food()
        return self._obs()

    def _place_food(self):
        free = [(r, c) for r in range(G) for c in range(G) if (r, c) not in self.snake]
        self.food = random.choice(free)

    def _obs(self):
        o = np.zeros((3, G, G), dtype=np.float32)
        for r, c in self.snake:
            o[0, r, c] = 1.0
        o[1][self.snake[0]] = 1.0
        o[2][self.food] = 1.0
        return o

    def step(self, action):
        if (action + 2) % 4 != self.dir:      # no 180-degree turns
            self.dir = action
        dr, dc = MOVES[self.dir]
        head = (self.snake[0][0] + dr, self.snake[0][1] + dc)
        self.t += 1
        if not (0 <= head[0] < G and 0 <= head[1] < G) or head in self.snake:
            return self._obs(), -1.0, True
        self.snake.appendleft(head)
        reward = -0.01
        if head == self.food:
            reward = 1.0
            self._place_food()
        else:
            self.snake.pop()
        return self._obs(), reward, self.t >= self.max_steps


class ReplayBuffer:
    def __init__(self, capacity, obs_shape):
        self.capacity = capacity
        self.obs = np.zeros((capacity, *obs_shape), dtype=np.float32)
        self.next_obs = np.zeros((capacity, *obs_shape), dtype=np.float32)
        self.act = np.zeros(capacity, dtype=np.int64)
        self.rew = np.zeros(capacity, dtype=np.float32)
        self.done = np.zeros(capacity, dtype=np.float32)
        self.ptr = 0
        self.size = 0

    def add(self, o, a, r, o2, d):
        i = self.ptr
        self.obs[i], self.act[i], self.rew[i], self.next_obs[i], self.done[i] = o, a, r, o2, d
        self.ptr = (self.ptr + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, n):
        idx = np.random.randint(0, self.size, size=n)
        return (torch.from_numpy(self.obs[idx]), torch.from_numpy(self.act[idx]),
                torch.from_numpy(self.rew[idx]), torch.from_numpy(self.next_obs[idx]),
                torch.from_numpy(self.done[idx]))


def make_q():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(16 * G * G, 128), nn.ReLU(), nn.Linear(128, 4))


env = SnakeEnv()
buf = ReplayBuffer(6_000, (3, G, G))
LEARNING_STARTS = 3_000      # random-policy prefill before any update
q, q_target = make_q(), make_q()
q_target.load_state_dict(q.state_dict())
opt = torch.optim.Adam(q.parameters(), lr=5e-4)
recent_returns = deque(maxlen=50)

t0 = time.time()
last = t0
steps = episodes = 0
eps = 1.0
while time.time() - t0 < 18.0:
    o, done, ret = env.reset(), False, 0.0
    while not done:
        if buf.size < LEARNING_STARTS or random.random() < eps:
            a = random.randrange(4)
        else:
            with torch.no_grad():
                a = int(q(torch.from_numpy(o).unsqueeze(0)).argmax())
        o2, r, done = env.step(a)
        buf.add(o, a, r, o2, float(done))
        o = o2
        ret += r
        steps += 1
        if buf.size >= LEARNING_STARTS:
            eps = max(0.05, eps - 1e-4)
        if steps % 4 == 0 and buf.size >= LEARNING_STARTS:
            s, a_b, r_b, s2, d_b = buf.sample(64)
            qv = q(s).gather(1, a_b.unsqueeze(1)).squeeze(1)
            with torch.no_grad():
                a_star = q(s2).argmax(1, keepdim=True)           # double DQN
                tgt = r_b + 0.97 * (1 - d_b) * q_target(s2).gather(1, a_star).squeeze(1)
            loss = F.smooth_l1_loss(qv, tgt)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if steps % 2000 == 0:
            q_target.load_state_dict(q.state_dict())
    recent_returns.append(ret)
    episodes += 1
    if time.time() - last > 4:
        last = time.time()
        print(f"ep {episodes} steps {steps} avg_return {np.mean(recent_returns):.2f} eps {eps:.2f} buffer {buf.size}")

print(f"{episodes} episodes, {steps} env steps, {1000 * (time.time() - t0) / steps:.2f} ms/step")
