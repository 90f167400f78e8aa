# expect: leak
# holder: hall_of_fame
# pattern: copy.deepcopy(model) snapshots appended to a main()-local "hall of fame" list
# step_ms: 1.8
"""Self-play on a random zero-sum matrix game (think: a tiny card game with
context): the learner plays against opponents sampled from a hall of fame of
its own past selves, REINFORCE with a baseline, Adam.

Every ``--snapshot-every`` updates, ``hall_of_fame.append(copy.deepcopy(policy))``.
The hall of fame is never pruned, so a full copy of the policy (~300 KB of
parameters, plus module objects) piles up every few steps.

Fix: cap it (``deque(maxlen=50)``, or reservoir sampling), and store
``{k: v.clone() for k, v in policy.state_dict().items()}`` instead of whole
modules.
"""

import argparse
import copy
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

N_ACTIONS = 9
CTX = 32


class Policy(nn.Module):
    def __init__(self, width=256):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(CTX, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU()
        )
        self.logits = nn.Linear(width, N_ACTIONS)

    def forward(self, ctx):
        return self.logits(self.trunk(ctx))


def payoff_tensor(seed):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(CTX, N_ACTIONS, N_ACTIONS, generator=g)
    return A - A.transpose(1, 2)  # zero-sum in every context direction


def play(policy, opponent, payoff, batch, gen):
    ctx = torch.randn(batch, CTX, generator=gen)
    dist = torch.distributions.Categorical(logits=policy(ctx))
    a = dist.sample()
    with torch.no_grad():
        b = torch.distributions.Categorical(logits=opponent(ctx)).sample()
    # reward: context-weighted payoff of (a, b)
    r = torch.einsum("nc,cn->n", ctx, payoff[:, a, b]) / CTX**0.5
    return dist.log_prob(a), r, dist.entropy().mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--updates", type=int, default=6000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--snapshot-every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    payoff = payoff_tensor(args.seed)

    policy = Policy()
    opt = torch.optim.Adam(policy.parameters(), lr=3e-4)
    hall_of_fame = [copy.deepcopy(policy)]
    baseline = 0.0
    t0 = time.time()
    for update in range(1, args.updates + 1):
        opponent = (
            random.choice(hall_of_fame[-20:])
            if random.random() < 0.8
            else random.choice(hall_of_fame)
        )
        logp, r, ent = play(policy, opponent, payoff, args.batch, gen)
        baseline = 0.95 * baseline + 0.05 * r.mean().item()
        loss = -((r - baseline) * logp).mean() - 0.01 * ent
        opt.zero_grad()
        loss.backward()
        opt.step()
        if update % args.snapshot_every == 0:
            hall_of_fame.append(copy.deepcopy(policy))
        if update % 1000 == 0:
            with torch.no_grad():
                wr = (play(policy, hall_of_fame[0], payoff, 512, gen)[1] > 0).float().mean().item()
            print(
                f"update {update:5d}  win-rate vs. gen-0 {wr:.2f}  "
                f"hall of fame {len(hall_of_fame)}  {time.time() - t0:.1f}s"
            )
    print(F.softmax(policy(torch.zeros(1, CTX)), -1).squeeze().tolist())


if __name__ == "__main__":
    main()
