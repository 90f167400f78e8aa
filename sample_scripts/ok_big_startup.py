"""Training on a dataset that is loaded into memory in one go at start-up
(~200 MB of float32 features), then sampled in mini-batches. One big
allocation at the start, flat afterwards. Must not be flagged.
"""

import argparse

import numpy as np
import torch
from torch import nn


def load_dataset(n_rows: int, n_features: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((n_rows, n_features), dtype=np.float32)
    labels = (features[:, :3].sum(axis=1) > 0).astype(np.int64)
    return torch.from_numpy(features), torch.from_numpy(labels)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--rows", type=int, default=400_000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)

    X, Y = load_dataset(args.rows, 128)
    print(f"dataset in memory: {X.numel() * 4 / 2**20:.0f} MiB")
    net = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = torch.optim.RMSprop(net.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    for step in range(args.steps):
        idx = torch.randint(0, args.rows, (128,), generator=gen)
        loss = nn.functional.cross_entropy(net(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 300 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
