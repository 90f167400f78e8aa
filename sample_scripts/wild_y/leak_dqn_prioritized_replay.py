# expect: leak
# holder: replay.storage|PrioritizedReplay.storage|storage
# pattern: Double DQN with prioritized experience replay on a hand-written pixel "Catch" game (4 stacked 64x64 frames scaled to float32 in the env, baselines ScaledFloatFrame-style; Nature-DQN-style CNN with reduced widths; torch.optim.Adam, one env step + one minibatch update per loop iteration, ~7 ms, code in main() + DQNAgent/PrioritizedReplay/SumTree classes). The replay keeps priorities in a fixed-size sum-tree over `capacity` slots, and the transitions themselves in a dict keyed by a global transition id (slot_to_id maps slot -> id, so that priority updates computed from an old sample can be recognised as stale and ignored, Ape-X style). add() writes the new id into slot_to_id[slot] *before* calling _drop(slot), and _drop() looks up the id to forget through slot_to_id, so it pops the brand-new id (not stored yet) instead of the evicted one; the sum-tree, the slot map and len(replay) all stay at capacity and sampling is correct, but replay.storage keeps every transition ever added (its frame stacks, ~64 KB of new float32 frames per step) for the whole run.
# step_ms: 7
"""Double DQN + prioritized replay on a tiny pixel Catch game."""
import time

import numpy as np
import psutil
import torch
import torch.nn as nn
import torch.nn.functional as F


def rss_mb():
    return psutil.Process().memory_info().rss / 2**20


class Catch:
    """A ball falls from the top; the 3-pixel paddle at the bottom must catch it."""

    def __init__(self, size=64, seed=0, stack=4):
        self.size, self.stack = size, stack
        self.rng = np.random.default_rng(seed)
        self.frames = np.zeros((stack, size, size), dtype=np.float32)

    def _render(self):
        f = np.zeros((self.size, self.size), dtype=np.float32)     # scaled float frame in [0, 1]
        by, bx = int(self.ball[0]), int(self.ball[1])
        f[max(by - 1, 0):by + 1, max(bx - 1, 0):bx + 1] = 1.0
        f[-2:, max(self.paddle - 3, 0):self.paddle + 4] = 0.6
        return f

    def reset(self):
        self.ball = np.array([0.0, self.rng.integers(2, self.size - 2)], dtype=np.float64)
        self.vx = self.rng.choice([-0.6, -0.3, 0.0, 0.3, 0.6])
        self.paddle = self.size // 2
        f = self._render()
        self.frames[:] = f
        return self.frames.copy()

    def step(self, action):
        self.paddle = int(np.clip(self.paddle + (action - 1) * 2, 3, self.size - 4))
        self.ball[0] += 1.5
        self.ball[1] = np.clip(self.ball[1] + self.vx, 1, self.size - 2)
        if self.ball[1] in (1, self.size - 2):
            self.vx = -self.vx
        done = self.ball[0] >= self.size - 3
        reward = 0.0
        if done:
            reward = 1.0 if abs(self.ball[1] - self.paddle) <= 4 else -1.0
        self.frames = np.roll(self.frames, -1, axis=0)
        self.frames[-1] = self._render()
        return self.frames.copy(), reward, done


class SumTree:
    def __init__(self, capacity):
        self.capacity = capacity
        self.tree = np.zeros(2 * capacity - 1)

    def update(self, slot, p):
        i = slot + self.capacity - 1
        change = p - self.tree[i]
        while True:
            self.tree[i] += change
            if i == 0:
                break
            i = (i - 1) // 2

    def total(self):
        return self.tree[0]

    def find(self, value):
        i = 0
        while i < self.capacity - 1:
            left = 2 * i + 1
            if value <= self.tree[left]:
                i = left
            else:
                value -= self.tree[left]
                i = left + 1
        return i - (self.capacity - 1)


class PrioritizedReplay:
    def __init__(self, capacity, alpha=0.6, seed=0):
        self.capacity, self.alpha = capacity, alpha
        self.tree = SumTree(capacity)
        self.slot_to_id = np.full(capacity, -1, dtype=np.int64)
        self.storage = {}          # transition id -> (obs, action, reward, next_obs, done)
        self.cursor = 0
        self.size = 0
        self.next_id = 0
        self.max_priority = 1.0
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return self.size

    def _drop(self, slot):
        old_id = int(self.slot_to_id[slot])
        self.storage.pop(old_id, None)

    def add(self, transition):
        slot = self.cursor
        tid = self.next_id
        self.next_id += 1
        self.slot_to_id[slot] = tid
        self._drop(slot)                    # forget whatever lived in this slot before
        self.storage[tid] = transition
        self.tree.update(slot, self.max_priority ** self.alpha)
        self.cursor = (slot + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size, beta):
        total = self.tree.total()
        bounds = np.linspace(0.0, total, batch_size + 1)
        values = self.rng.uniform(bounds[:-1], bounds[1:])
        slots = np.array([min(self.tree.find(v), self.size - 1) for v in values])
        ids = self.slot_to_id[slots]
        leaf = self.tree.tree[slots + self.capacity - 1]
        probs = leaf / total
        weights = (self.size * probs) ** (-beta)
        weights /= weights.max()
        batch = [self.storage[int(i)] for i in ids]
        obs, act, rew, nxt, done = zip(*batch)
        return (np.stack(obs), np.array(act), np.array(rew, dtype=np.float32),
                np.stack(nxt), np.array(done, dtype=np.float32), slots, ids, weights)

    def update_priorities(self, slots, ids, td_errors):
        for slot, tid, err in zip(slots, ids, td_errors):
            if self.slot_to_id[slot] != tid:     # slot was overwritten since sampling
                continue
            p = float(abs(err)) + 1e-3
            self.max_priority = max(self.max_priority, p)
            self.tree.update(int(slot), p ** self.alpha)


class QNet(nn.Module):
    def __init__(self, n_actions=3):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(4, 16, 8, stride=4), nn.ReLU(),
            nn.Conv2d(16, 32, 4, stride=2), nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=1), nn.ReLU(),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(32 * 4 * 4, 128), nn.ReLU(), nn.Linear(128, n_actions))

    def forward(self, x):
        return self.head(self.conv(x))


class DQNAgent:
    def __init__(self, lr=2.5e-4, gamma=0.97, seed=0):
        self.q = QNet()
        self.target = QNet()
        self.target.load_state_dict(self.q.state_dict())
        self.opt = torch.optim.Adam(self.q.parameters(), lr=lr)
        self.gamma = gamma
        self.rng = np.random.default_rng(seed)

    def act(self, obs, eps):
        if self.rng.random() < eps:
            return int(self.rng.integers(3))
        with torch.no_grad():
            return int(self.q(torch.from_numpy(obs[None])).argmax(1))

    def learn(self, batch):
        obs, act, rew, nxt, done, slots, ids, w = batch
        obs, nxt = torch.from_numpy(obs), torch.from_numpy(nxt)
        act = torch.from_numpy(act).long()
        rew, done, w = torch.from_numpy(rew), torch.from_numpy(done), torch.from_numpy(w).float()
        q = self.q(obs).gather(1, act[:, None]).squeeze(1)
        with torch.no_grad():
            best = self.q(nxt).argmax(1, keepdim=True)
            target = rew + self.gamma * (1 - done) * self.target(nxt).gather(1, best).squeeze(1)
        td = target - q
        loss = (w * F.smooth_l1_loss(q, target, reduction="none")).mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.q.parameters(), 10.0)
        self.opt.step()
        return loss.item(), td.detach().numpy()


def main():
    torch.set_num_threads(1)   # tiny nets: intra-op threads only add overhead
    torch.manual_seed(0)
    np.random.seed(0)
    total_steps, warmup, batch_size = 2200, 100, 32
    env = Catch(seed=0)
    agent = DQNAgent(seed=0)
    replay = PrioritizedReplay(capacity=400, seed=0)

    obs = env.reset()
    episode_rewards, losses = [], []
    print(f"start: rss={rss_mb():.1f} MB")
    t0 = time.time()
    for step in range(1, total_steps + 1):
        eps = max(0.05, 1.0 - step / 1000)
        action = agent.act(obs, eps)
        nxt, reward, done = env.step(action)
        replay.add((obs, action, reward, nxt, done))
        obs = env.reset() if done else nxt
        if done:
            episode_rewards.append(reward)
        if step > warmup:
            beta = min(1.0, 0.4 + 0.6 * step / total_steps)
            batch = replay.sample(batch_size, beta)
            loss, td = agent.learn(batch)
            replay.update_priorities(batch[5], batch[6], td)
            losses.append(loss)
        if step % 250 == 0:
            agent.target.load_state_dict(agent.q.state_dict())
        if step % 200 == 0:
            catch_rate = np.mean(np.array(episode_rewards[-50:]) > 0) if episode_rewards else 0.0
            print(f"step {step:5d}  eps={eps:.2f}  loss={np.mean(losses[-100:]) if losses else 0:.4f}  "
                  f"catch(50)={catch_rate:.2f}  replay={len(replay)}  "
                  f"{1000 * (time.time() - t0) / step:.1f} ms/step  rss={rss_mb():.1f} MB")
    print(f"end: rss={rss_mb():.1f} MB  wall={time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
