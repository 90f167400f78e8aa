# expect: leak
# holder: memory
# pattern: DQN "replay buffer" is a plain Python list of tensor transitions that is appended to forever (capacity check forgotten)
# step_ms: 1
"""DQN on a hand-written CartPole (no gym dependency), student RL assignment.

The agent's replay memory is ``self.memory = []``; the capacity argument is
stored but never enforced, so every transition (two state tensors, action,
reward, done) lives until the end of the run. Slow leak: a few hundred bytes per
environment step.
Fix: ``collections.deque(maxlen=capacity)`` or pop the oldest entry.
"""
import math
import random
import time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
random.seed(1)
np.random.seed(1)
torch.manual_seed(1)


class CartPoleEnv:
    """Classic cart-pole dynamics (Barto, Sutton & Anderson), Euler integration."""

    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02

    def __init__(self, max_steps=500):
        self.max_steps = max_steps
        self.state = None
        self.t = 0

    def reset(self):
        self.state = np.random.uniform(-0.05, 0.05, size=4)
        self.t = 0
        return self.state.copy()

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        total_mass = self.masscart + self.masspole
        pml = self.masspole * self.length
        costh, sinth = math.cos(theta), math.sin(theta)
        temp = (force + pml * theta_dot ** 2 * sinth) / total_mass
        thetaacc = (self.gravity * sinth - costh * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costh ** 2 / total_mass))
        xacc = temp - pml * thetaacc * costh / total_mass
        x += self.tau * x_dot
        x_dot += self.tau * xacc
        theta += self.tau * theta_dot
        theta_dot += self.tau * thetaacc
        self.state = np.array([x, x_dot, theta, theta_dot])
        self.t += 1
        done = abs(x) > 2.4 or abs(theta) > 12 * 2 * math.pi / 360 or self.t >= self.max_steps
        return self.state.copy(), 1.0, done


class QNet(nn.Module):
    def __init__(self, n_obs=4, n_act=2):
        super().__init__()
        self.l1 = nn.Linear(n_obs, 64)
        self.l2 = nn.Linear(64, 64)
        self.l3 = nn.Linear(64, n_act)

    def forward(self, x):
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


class DQNAgent:
    def __init__(self, capacity=5000, batch_size=32, gamma=0.99):
        self.capacity = capacity
        self.memory = []
        self.batch_size = batch_size
        self.gamma = gamma
        self.policy = QNet()
        self.target = QNet()
        self.target.load_state_dict(self.policy.state_dict())
        self.opt = torch.optim.Adam(self.policy.parameters(), lr=5e-4)
        self.eps = 1.0

    def act(self, state):
        if random.random() < self.eps:
            return random.randrange(2)
        with torch.no_grad():
            return int(self.policy(state.unsqueeze(0)).argmax(1).item())

    def remember(self, s, a, r, s2, done):
        self.memory.append((s, a, r, s2, done))

    def learn(self):
        if len(self.memory) < 500:
            return None
        batch = random.sample(self.memory, self.batch_size)
        s = torch.stack([b[0] for b in batch])
        a = torch.tensor([b[1] for b in batch])
        r = torch.tensor([b[2] for b in batch], dtype=torch.float32)
        s2 = torch.stack([b[3] for b in batch])
        d = torch.tensor([b[4] for b in batch], dtype=torch.float32)
        q = self.policy(s).gather(1, a.unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            target = r + self.gamma * (1 - d) * self.target(s2).max(1).values
        loss = F.smooth_l1_loss(q, target)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()


def main():
    env = CartPoleEnv()
    agent = DQNAgent()
    total_steps = 0
    episode = 0
    returns = []
    t0 = time.time()
    last_print = t0
    while time.time() - t0 < 18.0:
        state = torch.tensor(env.reset(), dtype=torch.float32)
        ep_ret, done = 0.0, False
        while not done:
            action = agent.act(state)
            nxt, reward, done = env.step(action)
            nxt = torch.tensor(nxt, dtype=torch.float32)
            agent.remember(state, action, reward, nxt, done)
            agent.learn()
            state = nxt
            ep_ret += reward
            total_steps += 1
            agent.eps = max(0.05, agent.eps * 0.9995)
            if total_steps % 500 == 0:
                agent.target.load_state_dict(agent.policy.state_dict())
        returns.append(ep_ret)
        episode += 1
        if time.time() - last_print > 4:
            last_print = time.time()
            print(f"ep {episode:4d} steps {total_steps:6d} avg_return(20) {np.mean(returns[-20:]):6.1f} eps {agent.eps:.2f}")
    dt = time.time() - t0
    print(f"{episode} episodes, {total_steps} steps, {1000 * dt / total_steps:.2f} ms/step, memory={len(agent.memory)}")


if __name__ == "__main__":
    main()
