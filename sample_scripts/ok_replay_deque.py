"""DQN-style training with a replay buffer bounded by `deque(maxlen=...)`.

The buffer fills during the first part of the run, then each new transition
pushes the oldest out. Must not be flagged.
"""

import argparse
import collections
import random

import torch
from torch import nn

Transition = collections.namedtuple("Transition", "state action reward next_state done")


class ReplayBuffer:
    def __init__(self, capacity):
        self.items = collections.deque(maxlen=capacity)

    def push(self, *args):
        self.items.append(Transition(*args))

    def sample(self, n):
        batch = random.sample(self.items, n)
        return Transition(*map(torch.stack, zip(*[(torch.as_tensor(v) for v in t) for t in batch])))

    def __len__(self):
        return len(self.items)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--capacity", type=int, default=2000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(4)
    random.seed(4)

    q = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    target = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    target.load_state_dict(q.state_dict())
    opt = torch.optim.Adam(q.parameters(), lr=5e-4)
    buf = ReplayBuffer(args.capacity)
    state = torch.randn(16)
    for step in range(args.steps):
        # four environment transitions per gradient step
        for _ in range(4):
            action = random.randrange(4)
            next_state = 0.9 * state + 0.1 * torch.randn(16)
            reward = float(next_state[action])
            buf.push(state, action, reward, next_state, float(random.random() < 0.02))
            state = next_state
        if len(buf) < 64:
            continue
        b = buf.sample(32)
        with torch.no_grad():
            tgt = b.reward + 0.99 * (1 - b.done) * target(b.next_state).max(1).values
        pred = q(b.state).gather(1, b.action.long().unsqueeze(1)).squeeze(1)
        loss = nn.functional.smooth_l1_loss(pred, tgt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 200 == 0:
            target.load_state_dict(q.state_dict())
            print(f"step {step} loss {loss.item():.4f} buffer {len(buf)}")


if __name__ == "__main__":
    main()
