# expect: leak
# holder: archive|episode_archive
# pattern: REINFORCE-with-baseline agent (torch.optim.Adam, module top level) for a hand-written 2-D drone-landing environment with top-down frame rendering; a multiprocessing.Manager() list is shared with a separate dashboard process that only ever reads archive[-1] to show the latest episode, but the trainer appends every finished episode (obs, actions, rewards and its stack of 64x64 uint8 frames, ~0.25 MB) with archive.append(...) and never drops old ones, so the list inside the Manager's server process (a child process, not the trainer) grows by ~1.5 MB per update for the whole run while the trainer's own RSS stays flat
# step_ms: 130
"""Drone landing with REINFORCE + value baseline.

A hand-written 2-D environment: a small drone with two thrusters has to land
on a pad on uneven terrain.  Five episodes per update.  A separate dashboard
process shows the most recent episode (it reads it from a Manager list), so
training never waits on plotting.
"""
import multiprocessing as mp
import time

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)

GRID = 64
MAX_T = 240
N_RAYS = 8
EPISODES_PER_UPDATE = 5
UPDATES = 140
GAMMA = 0.99


class DroneLandingEnv:
    """Point-mass drone with attitude, gravity, wind and a terrain height map."""

    actions = ((0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0))

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.terrain = np.zeros(GRID)
        self.pad = 0

    def reset(self):
        rng = self.rng
        xs = np.linspace(0, 4 * np.pi, GRID)
        phase = rng.uniform(0, 2 * np.pi, 3)
        self.terrain = 0.08 + 0.05 * (np.sin(xs + phase[0]) + 0.5 * np.sin(2.3 * xs + phase[1])
                                      + 0.3 * np.sin(5.1 * xs + phase[2]))
        self.pad = int(rng.integers(8, GRID - 8))
        self.terrain[self.pad - 3:self.pad + 4] = self.terrain[self.pad]
        self.pos = np.array([rng.uniform(0.1, 0.9), rng.uniform(0.7, 0.9)])
        self.vel = np.array([rng.normal(0, 0.05), 0.0])
        self.angle = rng.normal(0, 0.1)
        self.omega = 0.0
        self.wind = rng.normal(0, 0.02)
        self.t = 0
        return self._obs()

    def _rays(self):
        col = np.clip((self.pos[0] * (GRID - 1)).astype(int) + np.arange(-N_RAYS // 2, N_RAYS // 2), 0, GRID - 1)
        return self.pos[1] - self.terrain[col]

    def _obs(self):
        pad_x = self.pad / (GRID - 1)
        return np.concatenate([
            self.pos, self.vel, [np.sin(self.angle), np.cos(self.angle), self.omega],
            [pad_x - self.pos[0], self.pos[1] - self.terrain[self.pad]], self._rays(),
        ]).astype(np.float32)

    def render(self):
        frame = np.zeros((GRID, GRID), np.uint8)
        h = (self.terrain * (GRID - 1)).astype(int)
        rows = np.arange(GRID)[:, None]
        frame[rows < h[None, :]] = 80
        frame[:h[self.pad] + 1, self.pad - 3:self.pad + 4] = 160
        cx = int(np.clip(self.pos[0], 0, 1) * (GRID - 1))
        cy = int(np.clip(self.pos[1], 0, 1) * (GRID - 1))
        frame[max(cy - 1, 0):cy + 2, max(cx - 2, 0):cx + 3] = 255
        return frame[::-1]

    def step(self, a):
        left, right = self.actions[a]
        dt = 0.05
        thrust = 0.55 * (left + right)
        torque = 2.0 * (right - left)
        acc = np.array([-np.sin(self.angle) * thrust + self.wind, np.cos(self.angle) * thrust - 0.5])
        self.vel = self.vel + acc * dt
        self.omega = 0.95 * self.omega + torque * dt
        self.angle = self.angle + self.omega * dt
        self.pos = self.pos + self.vel * dt
        self.t += 1
        col = int(np.clip(self.pos[0], 0, 1) * (GRID - 1))
        ground = self.terrain[col]
        shaping = -abs(self.pad / (GRID - 1) - self.pos[0]) - 0.1 * abs(self.angle)
        done, reward = False, 0.02 * shaping - 0.003 * thrust
        if self.pos[1] <= ground:
            done = True
            soft = abs(self.vel[1]) < 0.25 and abs(self.angle) < 0.3
            on_pad = abs(col - self.pad) <= 3
            reward += 10.0 if (soft and on_pad) else (2.0 if on_pad else -3.0)
        elif not (0.0 <= self.pos[0] <= 1.0) or self.pos[1] > 1.2 or self.t >= MAX_T:
            done, reward = True, reward - 2.0
        return self._obs(), reward, done


class Policy(nn.Module):
    def __init__(self, obs_dim, n_act):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh())
        self.pi = nn.Linear(128, n_act)
        self.v = nn.Linear(128, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.pi(h), self.v(h).squeeze(-1)


def dashboard(archive, stop):
    """Separate process: summarise the latest episode every second."""
    last_seen = -1
    while not stop.is_set():
        n = len(archive)
        if n and n - 1 != last_seen:
            ep = archive[-1]
            last_seen = n - 1
            heat = ep["frames"].astype(np.float32).mean(0)
            print(f"    [dashboard] episode {ep['episode']:4d}: return {ep['rewards'].sum():6.2f}, "
                  f"len {len(ep['actions']):3d}, drone coverage {(heat > 20).mean():.2f}", flush=True)
        stop.wait(1.0)


def run_episode(env, policy):
    obs = env.reset()
    obs_buf, act_buf, rew_buf, frames, logps, values = [], [], [], [], [], []
    done = False
    while not done:
        o = torch.from_numpy(obs)
        logits, v = policy(o)
        dist = torch.distributions.Categorical(logits=logits)
        a = dist.sample()
        logps.append(dist.log_prob(a))
        values.append(v)
        obs_buf.append(obs)
        act_buf.append(int(a))
        frames.append(env.render())
        obs, r, done = env.step(int(a))
        rew_buf.append(r)
    return obs_buf, act_buf, rew_buf, frames, torch.stack(logps), torch.stack(values)


def discounted(rews):
    out, g = np.zeros(len(rews), np.float32), 0.0
    for i in range(len(rews) - 1, -1, -1):
        g = rews[i] + GAMMA * g
        out[i] = g
    return out


if __name__ == "__main__":
    torch.manual_seed(3)
    manager = mp.Manager()
    archive = manager.list()
    stop = mp.Event()
    dash = mp.Process(target=dashboard, args=(archive, stop), daemon=True)
    dash.start()

    env = DroneLandingEnv(seed=11)
    obs_dim = env.reset().shape[0]
    policy = Policy(obs_dim, len(DroneLandingEnv.actions))
    opt = torch.optim.Adam(policy.parameters(), lr=1e-3)

    episode = 0
    recent_returns = []
    t0 = time.time()
    for update in range(1, UPDATES + 1):
        loss_terms = []
        for _ in range(EPISODES_PER_UPDATE):
            obs_buf, act_buf, rew_buf, frames, logps, values = run_episode(env, policy)
            returns = torch.from_numpy(discounted(rew_buf))
            adv = returns - values.detach()
            loss_terms.append(-(logps * adv).mean() + 0.5 * ((values - returns) ** 2).mean())
            archive.append({
                "episode": episode,
                "obs": np.stack(obs_buf),
                "actions": np.array(act_buf, np.int8),
                "rewards": np.array(rew_buf, np.float32),
                "frames": np.stack(frames),
            })
            episode += 1
            recent_returns = (recent_returns + [float(sum(rew_buf))])[-40:]
        loss = torch.stack(loss_terms).mean()
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        opt.step()
        if update % 10 == 0:
            el = time.time() - t0
            print(f"update {update:4d}  episodes {episode:5d}  mean return(40) {np.mean(recent_returns):6.2f}  "
                  f"loss {loss.item():7.3f}  {1000 * el / update:.0f} ms/update", flush=True)

    stop.set()
    dash.join(timeout=5)
    print(f"training finished in {time.time() - t0:.1f}s, {episode} episodes")
    manager.shutdown()
