# expect: leak
# holder: trials
# pattern: random hyper-parameter search appends each trial's trained model and AdamW optimizer (with its moment buffers) to a results list kept for later analysis
# step_ms: 250
"""Random search over a small MLP regressor.

Each trial samples a config, trains a fresh model for a few hundred steps on a
synthetic regression problem and evaluates it on a held-out split.  The
results are collected in ``trials`` so that, at the end, we can print a
leaderboard and "inspect the best models".

Why it leaks: every entry in ``trials`` keeps the whole ``nn.Module`` *and*
its optimizer, i.e. parameters, gradients and both Adam moment buffers
(~4x the parameter memory) for every trial ever run, not just the best one.

Fix: store ``copy.deepcopy(model.state_dict())`` only for the current best
trial (or save checkpoints to disk) and keep plain floats for the rest.
"""
import math
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

N_TRIALS = 55
STEPS_PER_TRIAL = 60
D_IN = 48


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, D_IN, generator=g)
    w = torch.randn(D_IN, 1, generator=g) / math.sqrt(D_IN)
    y = torch.sin(X @ w * 2.0) + 0.1 * (X[:, :4] ** 2).sum(1, keepdim=True)
    y += 0.05 * torch.randn(n, 1, generator=g)
    return X, y


def build_model(hidden, depth, dropout):
    layers, d = [], D_IN
    for _ in range(depth):
        layers += [nn.Linear(d, hidden), nn.ReLU(), nn.Dropout(dropout)]
        d = hidden
    layers.append(nn.Linear(d, 1))
    return nn.Sequential(*layers)


def sample_config(rng):
    return {
        "lr": 10 ** rng.uniform(-4, -2),
        "weight_decay": 10 ** rng.uniform(-6, -2),
        "hidden": rng.choice([96, 128, 256, 384]),
        "depth": rng.choice([2, 3]),
        "dropout": rng.choice([0.0, 0.1, 0.2]),
        "batch_size": rng.choice([64, 128, 256]),
    }


def run_trial(cfg, X_tr, y_tr, X_va, y_va):
    model = build_model(cfg["hidden"], cfg["depth"], cfg["dropout"])
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    n = X_tr.shape[0]
    model.train()
    for step in range(STEPS_PER_TRIAL):
        idx = torch.randint(0, n, (cfg["batch_size"],))
        loss = F.mse_loss(model(X_tr[idx]), y_tr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        val = F.mse_loss(model(X_va), y_va).item()
    return model, opt, val


def main():
    rng = random.Random(1234)
    X, y = make_data(6000, seed=0)
    X_tr, y_tr, X_va, y_va = X[:5000], y[:5000], X[5000:], y[5000:]

    trials = []
    t0 = time.time()
    for t in range(N_TRIALS):
        cfg = sample_config(rng)
        ts = time.time()
        model, opt, val = run_trial(cfg, X_tr, y_tr, X_va, y_va)
        trials.append({"trial": t, "config": cfg, "val_mse": val, "model": model,
                       "optimizer": opt, "seconds": time.time() - ts})
        if (t + 1) % 10 == 0:
            best = min(trials, key=lambda r: r["val_mse"])
            print(f"[{time.time() - t0:5.1f}s] trial {t + 1:3d}/{N_TRIALS}  "
                  f"best val_mse={best['val_mse']:.4f} (trial {best['trial']}, hidden={best['config']['hidden']})")

    print("top 3:")
    for r in sorted(trials, key=lambda r: r["val_mse"])[:3]:
        c = r["config"]
        print(f"  trial {r['trial']:3d} val={r['val_mse']:.4f} lr={c['lr']:.2e} hidden={c['hidden']} depth={c['depth']}")


if __name__ == "__main__":
    main()
