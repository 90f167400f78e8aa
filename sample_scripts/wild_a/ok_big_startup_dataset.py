# expect: no_leak
# pattern: large one-off allocation at start-up (~300 MB in-memory feature table), then flat training through a DataLoader; metrics kept as floats
# step_ms: 7
"""Tabular regression on a large in-memory synthetic feature table.

The whole training set (1.2 M rows x 64 float32 features + targets) is
materialised at start-up, so RSS jumps by a few hundred MB before the first
step.  After that every batch is a same-sized gather out of the table, the
AdamW state exists after step 1, and only Python floats are kept for the
learning curve, so memory is flat for the rest of the run (after the first batches, when the
DataLoader sampler materialises its shuffled index list).
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def build_table(n_rows, n_features, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_rows, n_features), dtype=np.float32)
    w = rng.standard_normal(n_features).astype(np.float32) / np.sqrt(n_features)
    y = np.tanh(x @ w) + 0.3 * np.sin(x[:, 0] * x[:, 1]) + 0.05 * rng.standard_normal(n_rows).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))


def main():
    torch.manual_seed(0)
    t0 = time.time()
    x, y = build_table(1_200_000, 64)
    n_val = 50_000
    train = TensorDataset(x[n_val:], y[n_val:])
    x_val, y_val = x[:n_val], y[:n_val]
    print(f"built table {tuple(x.shape)} ({x.numel() * 4 / 2**20:.0f} MB) in {time.time() - t0:.1f}s", flush=True)

    loader = DataLoader(train, batch_size=512, shuffle=True, drop_last=True)
    model = nn.Sequential(nn.Linear(64, 256), nn.SiLU(), nn.Linear(256, 256), nn.SiLU(), nn.Linear(256, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    curve = []
    max_steps = 2100
    step = 0
    t0 = time.time()
    while step < max_steps:
        for xb, yb in loader:
            loss = F.mse_loss(model(xb).squeeze(1), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            curve.append(loss.item())
            step += 1
            if step % 350 == 0:
                model.eval()
                with torch.no_grad():
                    val = sum(F.mse_loss(model(x_val[i:i + 5000]).squeeze(1), y_val[i:i + 5000]).item()
                              for i in range(0, n_val, 5000)) / (n_val // 5000)
                model.train()
                print(f"step {step}  train {np.mean(curve[-350:]):.4f}  val {val:.4f}"
                      f"  ({time.time() - t0:.1f}s)", flush=True)
            if step >= max_steps:
                break


if __name__ == "__main__":
    main()
