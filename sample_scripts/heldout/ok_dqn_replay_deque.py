# expect: no_leak
# pattern: DQN replay buffer bounded by deque(maxlen=...), target net via load_state_dict
# step_ms: 2
"""DQN on a small grid-world ("find the key, then the door"), written from
scratch: epsilon-greedy, replay buffer, target network.

Memory: the replay buffer is a ``collections.deque(maxlen=capacity)``, so it
grows while it fills (about the first third of the run) and then each new
transition pushes the oldest out. The target network is refreshed with
``load_state_dict`` (copies into existing tensors), not re-created.
"""

import argparse
import collections
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

Transition = collections.namedtuple("Transition", "s a r s2 done")


class KeyDoorWorld:
    SIZE = 7
    MOVES = [(0, 1), (1, 0), (0, -1), (-1, 0)]

    def __init__(self, rng):
        self.rng = rng

    def reset(self):
        self.pos = (0, 0)
        self.key = (self.rng.randrange(1, self.SIZE), self.rng.randrange(self.SIZE))
        self.door = (self.SIZE - 1, self.SIZE - 1)
        self.has_key = False
        self.t = 0
        return self.obs()

    def obs(self):
        grid = torch.zeros(3, self.SIZE, self.SIZE)
        grid[0][self.pos] = 1
        if not self.has_key:
            grid[1][self.key] = 1
        grid[2][self.door] = 1
        return grid.flatten()

    def step(self, a):
        dx, dy = self.MOVES[a]
        x = min(max(self.pos[0] + dx, 0), self.SIZE - 1)
        y = min(max(self.pos[1] + dy, 0), self.SIZE - 1)
        self.pos = (x, y)
        self.t += 1
        r, done = -0.01, False
        if self.pos == self.key and not self.has_key:
            self.has_key, r = True, 0.5
        elif self.pos == self.door and self.has_key:
            r, done = 1.0, True
        if self.t >= 60:
            done = True
        return self.obs(), r, done


def qnet(n_in, n_out):
    return nn.Sequential(
        nn.Linear(n_in, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, n_out)
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--env-steps", type=int, default=12000)
    ap.add_argument("--capacity", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--sync-every", type=int, default=250)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = random.Random(0)
    env = KeyDoorWorld(rng)
    n_obs = 3 * env.SIZE * env.SIZE
    online, target = qnet(n_obs, 4), qnet(n_obs, 4)
    target.load_state_dict(online.state_dict())
    opt = torch.optim.Adam(online.parameters(), lr=5e-4)
    replay = collections.deque(maxlen=args.capacity)

    s = env.reset()
    returns, ep_ret = [], 0.0
    t0 = time.time()
    for t in range(args.env_steps):
        eps = max(0.05, 1.0 - t / (0.5 * args.env_steps))
        if rng.random() < eps:
            a = rng.randrange(4)
        else:
            with torch.no_grad():
                a = int(online(s).argmax())
        s2, r, done = env.step(a)
        replay.append(Transition(s, a, r, s2, float(done)))
        ep_ret += r
        s = s2
        if done:
            returns.append(ep_ret)
            ep_ret = 0.0
            s = env.reset()

        if len(replay) >= args.batch:
            batch = Transition(*zip(*rng.sample(replay, args.batch)))
            S, S2 = torch.stack(batch.s), torch.stack(batch.s2)
            A = torch.tensor(batch.a)
            R, D = torch.tensor(batch.r), torch.tensor(batch.done)
            q = online(S).gather(1, A[:, None]).squeeze(1)
            with torch.no_grad():
                tgt = R + 0.97 * (1 - D) * target(S2).max(1).values
            loss = F.smooth_l1_loss(q, tgt)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if t % args.sync_every == 0:
            target.load_state_dict(online.state_dict())
        if t % 1500 == 0:
            recent = returns[-20:] or [0.0]
            print(
                f"t={t:6d} eps={eps:.2f} replay={len(replay):5d} "
                f"return={sum(recent) / len(recent):+.2f} ({time.time() - t0:.1f}s)"
            )


if __name__ == "__main__":
    main()
