# expect: leak
# holder: _inflight|inflight|uploader|futures|EpisodeUploader
# pattern: REINFORCE on a numpy lidar point-mass env with a hand-written gradient step (torch.autograd.grad, no optimizer); every finished episode is handed to a ThreadPoolExecutor that serialises it (npz + crc) for an experience-store upload, and EpisodeUploader keeps every Future in self._inflight so close() can surface errors; each completed Future keeps its returned (key, payload, crc), so one serialised episode per iteration stays alive
# step_ms: 25
"""Policy-gradient agent for a 2-D point mass with simulated lidar.

Episodes are also uploaded (asynchronously) to an experience store so an
offline learner can reuse them; here the "upload" is simulated.
"""
import io
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)

N_BEAMS = 60
OBS_DIM = 4 + N_BEAMS
HORIZON = 40
N_EPISODES = 800
GRID = 32


class LidarReachEnv:
    def __init__(self, rng, n_obstacles=8):
        self.rng = rng
        self.n_obstacles = n_obstacles
        self.angles = np.linspace(0, 2 * np.pi, N_BEAMS, endpoint=False)
        self.dirs = np.stack([np.cos(self.angles), np.sin(self.angles)], 1)

    def reset(self):
        self.pos = self.rng.uniform(-1, 1, 2)
        self.vel = np.zeros(2)
        self.goal = self.rng.uniform(-1, 1, 2)
        self.obstacles = self.rng.uniform(-1.2, 1.2, (self.n_obstacles, 2))
        return self._obs()

    def _lidar(self):
        rel = self.obstacles - self.pos
        proj = rel @ self.dirs.T
        perp2 = (rel ** 2).sum(1, keepdims=True) - proj ** 2
        hit = (proj > 0) & (perp2 < 0.01)
        dist = np.where(hit, proj, 3.0).min(0)
        dist = dist + self.rng.normal(0, 0.01, N_BEAMS)  # range noise
        return np.clip(dist, 0.0, 3.0) / 3.0

    def _obs(self):
        return np.concatenate([self.pos, self.goal - self.pos, self._lidar()]).astype(np.float32)

    def render(self):
        """Egocentric occupancy grid (uint8), shown on the live dashboard."""
        rel = (self.obstacles - self.pos) / 3.0
        ij = np.clip(((rel + 1) * 0.5 * GRID).astype(int), 0, GRID - 1)
        frame = np.zeros((GRID, GRID), np.uint8)
        frame[ij[:, 1], ij[:, 0]] = 255
        g = np.clip((((self.goal - self.pos) / 3.0 + 1) * 0.5 * GRID).astype(int), 0, GRID - 1)
        frame[g[1], g[0]] = 128
        noise = self.rng.integers(0, 16, size=(GRID, GRID), dtype=np.uint8)
        return frame | noise

    def step(self, action):
        self.vel = 0.85 * self.vel + 0.05 * np.clip(action, -1, 1)
        self.pos = np.clip(self.pos + self.vel, -1.5, 1.5)
        d = np.linalg.norm(self.goal - self.pos)
        crash = (np.linalg.norm(self.obstacles - self.pos, axis=1) < 0.08).any()
        reward = -d - (1.0 if crash else 0.0)
        return self._obs(), reward, d < 0.05


class GaussianPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS_DIM, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh(), nn.Linear(128, 2))
        self.log_std = nn.Parameter(torch.full((2,), -0.5))

    def dist(self, obs):
        return torch.distributions.Normal(self.net(obs), self.log_std.exp())


class EpisodeUploader:
    """Serialises episodes on a worker thread and ships them to the store."""

    def __init__(self, workers=1):
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="upload")
        self._inflight = []
        self.bytes_sent = 0

    def _encode_and_send(self, key, episode):
        buf = io.BytesIO()
        np.savez(buf, **episode)
        payload = buf.getvalue()
        checksum = zlib.crc32(payload)
        # network call would go here
        self.bytes_sent += len(payload)
        return key, payload, checksum

    def submit(self, key, episode):
        self._inflight.append(self._pool.submit(self._encode_and_send, key, episode))

    def close(self):
        for fut in self._inflight:
            fut.result()  # re-raise upload errors
        self._pool.shutdown(wait=True)


def run_episode(env, policy):
    obs_list, act_list, rew_list, frames = [], [], [], []
    obs = env.reset()
    for _ in range(HORIZON):
        with torch.no_grad():
            a = policy.dist(torch.from_numpy(obs)).sample().numpy()
        obs_list.append(obs)
        frames.append(env.render())
        act_list.append(a)
        obs, r, done = env.step(a)
        rew_list.append(r)
        if done:
            break
    return (np.stack(obs_list), np.stack(act_list).astype(np.float32),
            np.array(rew_list, np.float32), np.stack(frames))


def reinforce_step(policy, obs, act, rew, baseline, lr=3e-3, gamma=0.98):
    ret = np.zeros_like(rew)
    g = 0.0
    for t in range(len(rew) - 1, -1, -1):
        g = rew[t] + gamma * g
        ret[t] = g
    adv = torch.from_numpy(ret - baseline)
    logp = policy.dist(torch.from_numpy(obs)).log_prob(torch.from_numpy(act)).sum(-1)
    loss = -(logp * adv).mean()
    params = [p for p in policy.parameters()]
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        norm = torch.sqrt(sum((g_ ** 2).sum() for g_ in grads))
        scale = min(1.0, 5.0 / (float(norm) + 1e-8))
        for p, g_ in zip(params, grads):
            p.add_(g_, alpha=-lr * scale)
    return loss.item(), float(ret.mean())


def main():
    rng = np.random.default_rng(5)
    env = LidarReachEnv(rng)
    policy = GaussianPolicy()
    uploader = EpisodeUploader()
    baseline = 0.0
    t0 = time.time()
    for ep in range(N_EPISODES):
        obs, act, rew, frames = run_episode(env, policy)
        loss, mean_ret = reinforce_step(policy, obs, act, rew, baseline)
        baseline = 0.95 * baseline + 0.05 * mean_ret
        uploader.submit(f"run7/ep{ep:06d}", {"obs": obs.astype(np.float64), "act": act, "rew": rew, "frames": frames})
        if ep % 200 == 199:
            print(f"episode {ep + 1} return {rew.sum():7.2f} baseline {baseline:6.2f} "
                  f"uploaded {uploader.bytes_sent / 1e6:.1f} MB t={time.time() - t0:.1f}s", flush=True)
    uploader.close()


if __name__ == "__main__":
    main()
