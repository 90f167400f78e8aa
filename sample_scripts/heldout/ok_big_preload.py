# expect: no_leak
# pattern: one big allocation at start-up (~430 MB dataset preloaded), then a flat loop
# step_ms: 0.7
"""Click-log regression with the whole (synthetic) dataset preloaded into
memory as one float32 array -- 1.5M rows x 72 features, about 430 MB -- plus
precomputed normalisation statistics. Training then samples minibatches by
index (``torch.from_numpy`` views, no copies kept).

Memory: a big step at start-up, then flat.
"""

import argparse
import time

import numpy as np
import torch
import torch.nn as nn


def preload(n_rows, n_feat, seed):
    rng = np.random.default_rng(seed)
    print(f"preloading {n_rows * n_feat * 4 / 2**20:.0f} MiB ...", flush=True)
    X = np.empty((n_rows, n_feat), dtype=np.float32)
    chunk = 100_000
    w = rng.standard_normal(n_feat).astype(np.float32)
    y = np.empty(n_rows, dtype=np.float32)
    for i in range(0, n_rows, chunk):
        block = rng.standard_normal((min(chunk, n_rows - i), n_feat), dtype=np.float32)
        X[i : i + len(block)] = block
        y[i : i + len(block)] = np.tanh(block @ w / 4) + 0.1 * rng.standard_normal(len(block))
    mu, sd = X.mean(0), X.std(0) + 1e-6
    return X, y, mu, sd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_500_000)
    ap.add_argument("--steps", type=int, default=14000)
    ap.add_argument("--batch", type=int, default=256)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    X, y, mu, sd = preload(args.rows, 72, seed=0)
    mu_t, sd_t = torch.from_numpy(mu), torch.from_numpy(sd)
    model = nn.Sequential(nn.Linear(72, 128), nn.ReLU(), nn.Linear(128, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(1)
    t0 = time.time()
    ema = None
    for step in range(args.steps):
        idx = np.sort(rng.integers(0, args.rows, args.batch))
        xb = (torch.from_numpy(X[idx]) - mu_t) / sd_t
        yb = torch.from_numpy(y[idx])
        loss = nn.functional.mse_loss(model(xb).squeeze(1), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ema = loss.item() if ema is None else 0.99 * ema + 0.01 * loss.item()
        if step % 2000 == 0:
            print(f"step {step:5d} mse {ema:.4f} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
