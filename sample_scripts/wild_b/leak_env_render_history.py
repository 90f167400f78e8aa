# expect: leak
# holder: frames
# pattern: inline gym-style MountainCar env appends every rendered RGB frame to self.frames and reset() forgets to clear it; Monte-Carlo policy evaluation (no optimizer) reuses one env for thousands of episodes
# step_ms: 0.03
"""Behaviour-clone a MountainCar heuristic, then Monte-Carlo evaluate the cloned policy.

The evaluation phase has no optimizer: it only runs rollouts with epsilon noise.

The environment keeps ``self.frames`` so that the last episode can be written as a
GIF. Every RECORD_EVERY-th episode is recorded: ``render()`` appends a 96x128
RGB uint8 frame per step, but ``reset()`` only
resets the physics state and never clears ``self.frames``, so frames of every
episode accumulate in the single env instance that is reused for all rollouts.
Fix: ``self.frames = []`` in reset(), or a deque(maxlen=episode_len).
"""
import math
import time
import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(9)

rng = np.random.default_rng(9)


class MountainCarEnv:
    min_pos, max_pos, max_speed, goal = -1.2, 0.6, 0.07, 0.5
    W, H = 128, 96

    def __init__(self, max_steps=200):
        self.max_steps = max_steps
        self.frames = []
        self.pos = self.vel = 0.0
        self.t = 0
        xs = np.linspace(self.min_pos, self.max_pos, self.W)
        self._hill = ((np.sin(3 * xs) * 0.45 + 0.55) * (self.H - 8)).astype(int)

    def reset(self):
        self.pos = rng.uniform(-0.6, -0.4)
        self.vel = 0.0
        self.t = 0
        return np.array([self.pos, self.vel])

    def step(self, action):
        self.vel += (action - 1) * 0.001 - 0.0025 * math.cos(3 * self.pos)
        self.vel = min(max(self.vel, -self.max_speed), self.max_speed)
        self.pos += self.vel
        if self.pos < self.min_pos:
            self.pos, self.vel = self.min_pos, 0.0
        self.t += 1
        done = self.pos >= self.goal or self.t >= self.max_steps
        return np.array([self.pos, self.vel]), -1.0, done

    def render(self):
        img = np.full((self.H, self.W, 3), 235, dtype=np.uint8)
        cols = np.arange(self.W)
        img[self.H - 1 - self._hill, cols] = (40, 120, 40)
        cx = int((self.pos - self.min_pos) / (self.max_pos - self.min_pos) * (self.W - 1))
        cy = self.H - 1 - self._hill[cx]
        img[max(cy - 6, 0):cy, max(cx - 4, 0):cx + 5] = (200, 30, 30)
        self.frames.append(img)
        return img


def energy_policy(obs):
    # push in the direction of motion (pumps energy into the system)
    return 2 if obs[1] >= 0 else 0


# ---- behaviour cloning of the heuristic -------------------------------------
policy = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 3))
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
scale = torch.tensor([1 / 1.2, 1 / 0.07])
for it in range(300):
    obs_b = np.stack([rng.uniform(-1.2, 0.6, 256), rng.uniform(-0.07, 0.07, 256)], axis=1)
    acts = torch.tensor([energy_policy(o) for o in obs_b])
    logits = policy(torch.tensor(obs_b, dtype=torch.float32) * scale)
    loss = nn.functional.cross_entropy(logits, acts)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"behaviour cloning done, loss {loss.item():.3f}")


@torch.no_grad()
def nn_policy(obs, noise):
    if rng.random() < noise:
        return int(rng.integers(3))
    x = torch.tensor(obs, dtype=torch.float32) * scale
    return int(policy(x).argmax())


env = MountainCarEnv()
RECORD_EVERY = 100
noise_levels = [0.0, 0.1, 0.3, 0.5]
returns = {n: [] for n in noise_levels}
t0 = time.time()
last = t0
steps = 0
episodes = 0
while time.time() - t0 < 16.0:
    for noise in noise_levels:
        obs, done, G = env.reset(), False, 0.0
        while not done:
            obs, r, done = env.step(nn_policy(obs, noise))
            if episodes % RECORD_EVERY == 0:
                env.render()
            G += r
            steps += 1
        returns[noise].append(G)
        episodes += 1
    if time.time() - last > 4:
        last = time.time()
        print(f"{episodes} episodes: " + ", ".join(f"eps={n}: {np.mean(v):.1f}" for n, v in returns.items())
              + f" ({time.time() - t0:.1f}s)")

print("MC value of start state per noise level:")
for n, v in returns.items():
    print(f"  noise {n}: {np.mean(v):7.2f} +- {np.std(v) / math.sqrt(len(v)):.2f} ({len(v)} episodes)")
print(f"{steps} env steps, {1000 * (time.time() - t0) / steps:.3f} ms/step")
