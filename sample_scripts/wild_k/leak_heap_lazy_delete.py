# expect: leak
# holder: _heap|heap|replay
# pattern: prioritized replay kept as a heapq max-heap with lazy deletion (heapq-docs recipe): evicting the oldest transition only flags its heap entry invalid, but the flagged entry still holds the transition's frames and is dropped only if it ever surfaces at the top; low-priority evicted entries never do, so the heap list grows while len(buffer) stays at capacity
# step_ms: 3
"""DQN with greedy prioritized replay on a pixel gridworld.

The agent sees a 3x48x48 rendering of a 12x12 grid (walls, goal, agent) and
must reach the goal.  Replay sampling pops the highest-|TD| transitions from
a heap and pushes them back with their new priority.
"""
import heapq
import itertools
import time
from collections import deque

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


class GridWorld:
    SIZE = 12
    SCALE = 4
    MAX_STEPS = 60
    MOVES = np.array([[0, 1], [1, 0], [0, -1], [-1, 0]])

    def __init__(self, rng):
        self.rng = rng
        self.walls = np.zeros((self.SIZE, self.SIZE), bool)
        self.walls[[0, -1], :] = True
        self.walls[:, [0, -1]] = True
        self.walls[6, 2:9] = True

    def _free_cell(self):
        while True:
            c = self.rng.integers(1, self.SIZE - 1, 2)
            if not self.walls[c[0], c[1]]:
                return c

    def reset(self):
        self.agent, self.goal = self._free_cell(), self._free_cell()
        self.t = 0
        return self.render()

    def render(self):
        img = np.zeros((3, self.SIZE, self.SIZE), np.float32)
        img[0][self.walls] = 1.0
        img[1, self.goal[0], self.goal[1]] = 1.0
        img[2, self.agent[0], self.agent[1]] = 1.0
        return img.repeat(self.SCALE, 1).repeat(self.SCALE, 2)

    def step(self, a):
        nxt = self.agent + self.MOVES[a]
        if not self.walls[nxt[0], nxt[1]]:
            self.agent = nxt
        self.t += 1
        done = bool((self.agent == self.goal).all())
        reward = 1.0 if done else -0.01
        return self.render(), reward, done or self.t >= self.MAX_STEPS


class PrioritizedReplay:
    """Greedy prioritized replay; lazy deletion as in the heapq docs."""

    VALID, INVALID = True, False

    def __init__(self, capacity):
        self.capacity = capacity
        self._heap = []                       # entries: [-priority, seq, idx, transition, valid]
        self._live = {}                       # idx -> current entry
        self._fifo = deque()
        self._seq = itertools.count()
        self._next_idx = 0
        self.max_priority = 1.0
        self.td_scale = None                  # EMA of |TD|, priorities are scale-free

    def __len__(self):
        return len(self._live)

    def _push(self, idx, priority, transition):
        entry = [-priority, next(self._seq), idx, transition, self.VALID]
        heapq.heappush(self._heap, entry)
        self._live[idx] = entry

    def add(self, transition):
        idx = self._next_idx
        self._next_idx += 1
        self._push(idx, self.max_priority, transition)
        self._fifo.append(idx)
        if len(self._live) > self.capacity:
            old = self._fifo.popleft()
            self._live.pop(old)[4] = self.INVALID     # lazily deleted: skipped when popped

    def pop_batch(self, k):
        out = []
        while self._heap and len(out) < k:
            entry = heapq.heappop(self._heap)
            if entry[4] is self.VALID:
                out.append(entry)
        return out

    def push_back(self, entries, td_errors):
        abs_td = np.abs(td_errors)
        m = float(abs_td.mean())
        self.td_scale = m if self.td_scale is None else 0.99 * self.td_scale + 0.01 * m
        for entry, td in zip(entries, abs_td):
            p = float(td) / (self.td_scale + 1e-6) + 1e-3
            self.max_priority = max(self.max_priority, p)
            if entry[2] in self._live:
                self._push(entry[2], p, entry[3])


class QNet(nn.Module):
    def __init__(self, n_actions=4):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 4, stride=4)
        self.c2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = nn.Linear(32 * 6 * 6, 128)
        self.out = nn.Linear(128, n_actions)

    def forward(self, x):
        h = F.relu(self.c2(F.relu(self.c1(x))))
        return self.out(F.relu(self.fc(h.flatten(1))))


def main():
    rng = np.random.default_rng(5)
    torch.manual_seed(5)
    env = GridWorld(rng)
    q, q_target = QNet(), QNet()
    q_target.load_state_dict(q.state_dict())
    opt = torch.optim.Adam(q.parameters(), lr=5e-4)
    replay = PrioritizedReplay(capacity=600)
    gamma, batch, train_every = 0.97, 32, 4

    obs = env.reset()
    ep_ret, returns = 0.0, deque(maxlen=50)
    t0 = time.time()
    n_env_steps = 9000
    for t in range(1, n_env_steps + 1):
        eps = max(0.05, 1.0 - t / 5000)
        if rng.random() < eps:
            a = int(rng.integers(0, 4))
        else:
            with torch.no_grad():
                a = int(q(torch.from_numpy(obs)[None]).argmax())
        nxt, r, done = env.step(a)
        replay.add((obs, a, r, nxt, done))
        ep_ret += r
        obs = nxt
        if done:
            returns.append(ep_ret)
            ep_ret = 0.0
            obs = env.reset()

        if t % train_every == 0 and len(replay) >= batch:
            entries = replay.pop_batch(batch)
            o, a_, r_, n_, d_ = zip(*(e[3] for e in entries))
            o = torch.from_numpy(np.stack(o))
            n_ = torch.from_numpy(np.stack(n_))
            a_ = torch.tensor(a_)
            r_ = torch.tensor(r_, dtype=torch.float32)
            d_ = torch.tensor(d_, dtype=torch.float32)
            with torch.no_grad():
                target = r_ + gamma * (1 - d_) * q_target(n_).max(1).values
            pred = q(o).gather(1, a_[:, None]).squeeze(1)
            td = target - pred
            loss = F.smooth_l1_loss(pred, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            replay.push_back(entries, td.detach().numpy())
        if t % 500 == 0:
            q_target.load_state_dict(q.state_dict())
        if t % 1500 == 0:
            print(f"env step {t:5d}  eps {eps:.2f}  avg return {np.mean(returns) if returns else 0:.3f}  "
                  f"buffer {len(replay)}  {time.time() - t0:.1f}s", flush=True)
    print(f"done: {n_env_steps} env steps, {len(returns)} recent episodes avg return "
          f"{np.mean(returns):.3f}, buffer {len(replay)}, {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
