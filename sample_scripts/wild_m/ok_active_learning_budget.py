# expect: no_leak
# pattern: LabeledPool.add() grows the labeled feature/label arrays with np.concatenate after every acquisition round, but acquisitions stop once the labeling budget (40k samples, ~41 MB of float32 features) is spent, which happens in the first ~quarter of the run; afterwards the same arrays are only sampled for training, so memory rises in a staircase and then stays flat (MLP, torch.optim.Adam)
# step_ms: 4
"""Pool-based active learning with entropy sampling under a fixed labeling budget.

An unlabeled stream of document embeddings (256-d) is scored by the current
classifier; every round the most uncertain candidates are sent to the
(simulated) annotators and added to the labeled pool until the budget is
spent.  The classifier is trained continuously on the labeled pool with Adam;
test accuracy on a held-out set is reported every few rounds.
"""
import argparse
import time

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

DIM = 256
N_CLASSES = 20


class DocumentSource:
    """Gaussian-mixture embeddings pushed through a fixed random nonlinearity."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        g = np.random.default_rng(seed + 1000)
        self.means = g.normal(0, 1.0, (N_CLASSES, 32)).astype(np.float32)
        self.proj = (g.normal(0, 1, (32, DIM)) / np.sqrt(32)).astype(np.float32)
        self.prior = g.dirichlet(np.ones(N_CLASSES) * 2)

    def draw(self, n):
        y = self.rng.choice(N_CLASSES, size=n, p=self.prior)
        z = self.means[y] + 1.6 * self.rng.standard_normal((n, 32), dtype=np.float32)
        x = np.tanh(z @ self.proj) + 0.05 * self.rng.standard_normal((n, DIM), dtype=np.float32)
        return x.astype(np.float32), y.astype(np.int64)


class LabeledPool:
    def __init__(self, x, y):
        self.x, self.y = x, y
        self.acquired_in_round = np.zeros(len(y), dtype=np.int32)

    def __len__(self):
        return len(self.y)

    def add(self, x, y, round_idx):
        self.x = np.concatenate([self.x, x])
        self.y = np.concatenate([self.y, y])
        self.acquired_in_round = np.concatenate(
            [self.acquired_in_round, np.full(len(y), round_idx, dtype=np.int32)])

    def sample(self, rng, n):
        idx = rng.integers(0, len(self.y), n)
        return torch.from_numpy(self.x[idx]), torch.from_numpy(self.y[idx])


def entropy(logits):
    logp = F.log_softmax(logits, dim=1)
    return -(logp.exp() * logp).sum(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=165)
    parser.add_argument("--steps-per-round", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seed-size", type=int, default=500)
    parser.add_argument("--candidates", type=int, default=8192)
    parser.add_argument("--acquire", type=int, default=1500)
    parser.add_argument("--budget", type=int, default=40000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=8)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    source = DocumentSource(args.seed)
    x_test, y_test = source.draw(4000)
    x_test, y_test = torch.from_numpy(x_test), torch.from_numpy(y_test)
    pool = LabeledPool(*source.draw(args.seed_size))

    model = nn.Sequential(nn.Linear(DIM, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, N_CLASSES))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    t0 = time.time()
    for rnd in range(1, args.rounds + 1):
        model.train()
        for _ in range(args.steps_per_round):
            xb, yb = pool.sample(rng, args.batch_size)
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        spent = len(pool) - args.seed_size
        if spent < args.budget:
            model.eval()
            cand_x, cand_y = source.draw(args.candidates)
            with torch.no_grad():
                h = entropy(model(torch.from_numpy(cand_x))).numpy()
            k = min(args.acquire, args.budget - spent)
            top = np.argpartition(-h, k - 1)[:k]
            pool.add(cand_x[top], cand_y[top], rnd)  # the annotators return cand_y[top]
            if len(pool) - args.seed_size >= args.budget:
                print(f"round {rnd}: labeling budget of {args.budget} spent", flush=True)

        if rnd % 20 == 0 or rnd == 1:
            model.eval()
            with torch.no_grad():
                acc = (model(x_test).argmax(1) == y_test).float().mean().item()
            print(f"round {rnd:3d}  labeled {len(pool):6d}  loss {loss.item():.3f}  "
                  f"test acc {acc:.3f}  {time.time() - t0:.1f}s", flush=True)

    print(f"done: {args.rounds} rounds, {len(pool)} labeled samples, {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
