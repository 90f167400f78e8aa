# expect: no_leak
# pattern: Hyperband-style successive halving: each bracket builds 27 MLP configs, each with its own AdamW, trains them all briefly, then keeps the best third (rung = rung[:k] after sorting) for three times as many steps, until one is left; dropped configs lose their last reference (model, optimizer state and grads are freed), and only a few floats per config plus one best state_dict (replaced) survive a bracket, so memory peaks at the start of every bracket and falls back: a bounded sawtooth (MLP regression, torch.optim.AdamW)
# step_ms: 7
"""Successive-halving hyper-parameter search for a property-regression MLP.

Predicts a (synthetic) molecular property from 128-d descriptor vectors.  Each
Hyperband bracket samples 27 configurations (width, depth, learning rate,
weight decay, dropout), trains all of them for a small budget, keeps the best
third on validation MSE, triples their budget, and so on until one survivor
remains (Li et al., 2018).  Brackets are repeated with fresh samples.
"""
import argparse
import copy
import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

N_FEAT = 128


@dataclass
class Trial:
    cfg: dict
    model: nn.Module
    opt: torch.optim.Optimizer
    steps: int = 0
    val_mse: float = math.inf
    history: list = field(default_factory=list)


WIDTHS = [64, 128, 256, 512]


def sample_config(rng, width):
    return {
        "width": width,
        "depth": int(rng.integers(2, 4)),
        "lr": float(10 ** rng.uniform(-3.7, -2.3)),
        "wd": float(10 ** rng.uniform(-5, -2)),
        "dropout": float(rng.choice([0.0, 0.1, 0.2])),
    }


def build(cfg):
    layers, d = [], N_FEAT
    for _ in range(cfg["depth"]):
        layers += [nn.Linear(d, cfg["width"]), nn.SiLU(), nn.Dropout(cfg["dropout"])]
        d = cfg["width"]
    layers.append(nn.Linear(d, 1))
    model = nn.Sequential(*layers)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["wd"])
    return model, opt


def make_data(rng, n):
    x = rng.standard_normal((n, N_FEAT)).astype(np.float32)
    w1 = rng.standard_normal((N_FEAT, 16)).astype(np.float32) / np.sqrt(N_FEAT)
    h = np.tanh(x @ w1)
    y = h @ rng.standard_normal(16).astype(np.float32) + 0.3 * np.sin(3 * x[:, 0]) * x[:, 1]
    y += 0.05 * rng.standard_normal(n).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))


def train_for(trial, x, y, steps, batch, gen):
    trial.model.train()
    for _ in range(steps):
        idx = torch.randint(len(x), (batch,), generator=gen)
        loss = F.mse_loss(trial.model(x[idx]).squeeze(1), y[idx])
        trial.opt.zero_grad(set_to_none=True)
        loss.backward()
        trial.opt.step()
        trial.steps += 1
    trial.history.append(loss.item())


@torch.no_grad()
def validate(trial, x, y):
    trial.model.eval()
    pred = torch.cat([trial.model(xb).squeeze(1) for xb in x.split(1000)])
    trial.val_mse = F.mse_loss(pred, y).item()
    return trial.val_mse


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brackets", type=int, default=3)
    ap.add_argument("--n-configs", type=int, default=27)
    ap.add_argument("--eta", type=int, default=3)
    ap.add_argument("--min-steps", type=int, default=6)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    x, y = make_data(rng, 42_000)
    x_tr, y_tr, x_val, y_val = x[:40_000], y[:40_000], x[40_000:], y[40_000:]

    results = []            # (bracket, rung, cfg, steps, val_mse)
    best_mse, best_cfg, best_state = math.inf, None, None
    t0 = time.time()
    for bracket in range(args.brackets):
        # stratify the widths so every bracket covers the size range evenly
        widths = rng.permutation(np.resize(WIDTHS, args.n_configs))
        rung = []
        for width in widths:
            cfg = sample_config(rng, int(width))
            model, opt = build(cfg)
            rung.append(Trial(cfg, model, opt))
        budget, level = args.min_steps, 0
        while True:
            for trial in rung:
                train_for(trial, x_tr, y_tr, budget, args.batch, gen)
                validate(trial, x_val, y_val)
                results.append((bracket, level, trial.cfg, trial.steps, trial.val_mse))
            rung.sort(key=lambda t: t.val_mse)
            if rung[0].val_mse < best_mse:
                best_mse, best_cfg = rung[0].val_mse, dict(rung[0].cfg)
                best_state = copy.deepcopy(rung[0].model.state_dict())
            print(
                f"bracket {bracket} rung {level}: {len(rung)} configs x {budget} steps  "
                f"best val MSE={rung[0].val_mse:.4f}  ({time.time() - t0:.1f}s)"
            )
            if len(rung) == 1:
                break
            rung = rung[: max(1, len(rung) // args.eta)]
            budget *= args.eta
            level += 1
        del rung
    n_params = sum(v.numel() for v in best_state.values())
    print(f"best config {best_cfg}  val MSE={best_mse:.4f}  params={n_params}  trials run={len(results)}")
    print("done")


if __name__ == "__main__":
    main()
