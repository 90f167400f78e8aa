# expect: no_leak
# holder:
# pattern: random-search hyper-parameter sweep of residual MLPs on a synthetic tabular regression task (each trial builds a fresh model and a torch.optim.AdamW or SGD-momentum optimizer and trains ~420 steps of 256 rows, ~4 ms per step, 9 trials, code in main() + pydantic TrialConfig/TrialRecord models + Sweep class); every trial is logged in a pydantic TrialRecord whose fields are declared with mutable defaults (`losses: list[float] = []`, `grad_norms: list[float] = []`, `notes: dict[str, str] = {}`) and appended to by every step, which looks like the shared-mutable-default bug, but pydantic copies field defaults per instance, so each record owns small float lists (~7 KB per trial); the LR schedule comes from an lru_cache(maxsize=None) keyed by (total_steps, warmup) drawn from a 2x3 grid (at most 6 cached numpy arrays), the sweep keeps one best state_dict (replaced, never appended), and each trial's model, optimizer state and gradients are dropped when the next trial starts, so memory saw-tooths per trial on a flat baseline
# step_ms: 4
"""Random-search sweep for residual MLPs on tabular regression.

The synthetic task mixes smooth, interaction and threshold effects over 24
numeric features plus two categorical features (one-hot), with
heteroscedastic noise. Each trial samples depth, width, dropout, optimizer,
learning rate, weight decay and schedule, trains on the training split and
reports the validation RMSE. Trial records are pydantic models so the
sweep summary can be dumped as JSON.

Main options (defaults):
    --trials 9 --seed 0
"""
import argparse
import functools
import json
import math
import os
import time
from typing import Literal, Optional

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from pydantic import BaseModel, Field

torch.set_num_threads(1)


class TrialConfig(BaseModel):
    depth: int = Field(ge=1, le=6)
    width: int
    dropout: float = 0.0
    optimizer: Literal["adamw", "sgd"] = "adamw"
    lr: float
    weight_decay: float = 0.0
    total_steps: int = 400
    warmup: int = 0
    batch: int = 256


class TrialRecord(BaseModel):
    trial: int
    config: TrialConfig
    losses: list[float] = []
    grad_norms: list[float] = []
    val_rmse: Optional[float] = None
    best_step: Optional[int] = None
    seconds: float = 0.0
    notes: dict[str, str] = {}


def make_data(rng, n, d=24):
    x = rng.normal(0, 1, (n, d)).astype(np.float32)
    cat1 = rng.integers(0, 5, n)
    cat2 = rng.integers(0, 3, n)
    y = (np.sin(2 * x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] + (x[:, 3] > 0.5) * 1.5 - 0.3 * x[:, 4] ** 2
         + 0.8 * np.tanh(x[:, 5] + x[:, 6]) + 0.4 * cat1 - 0.7 * (cat2 == 2))
    y += rng.normal(0, 0.2 + 0.2 * np.abs(x[:, 7]), n)
    feats = np.concatenate([x, np.eye(5, dtype=np.float32)[cat1], np.eye(3, dtype=np.float32)[cat2]], 1)
    return feats, y.astype(np.float32)


class ResBlock(nn.Module):
    def __init__(self, w, p):
        super().__init__()
        self.norm = nn.LayerNorm(w)
        self.fc1 = nn.Linear(w, w)
        self.fc2 = nn.Linear(w, w)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return x + self.fc2(self.drop(F.gelu(self.fc1(self.norm(x)))))


class ResMLP(nn.Module):
    def __init__(self, d_in, cfg):
        super().__init__()
        self.inp = nn.Linear(d_in, cfg.width)
        self.blocks = nn.Sequential(*[ResBlock(cfg.width, cfg.dropout) for _ in range(cfg.depth)])
        self.out = nn.Linear(cfg.width, 1)

    def forward(self, x):
        return self.out(self.blocks(self.inp(x))).squeeze(-1)


@functools.lru_cache(maxsize=None)
def lr_multipliers(total_steps, warmup):
    s = np.arange(total_steps, dtype=np.float64)
    warm = np.minimum(1.0, (s + 1) / max(warmup, 1)) if warmup else np.ones_like(s)
    return warm * 0.5 * (1 + np.cos(np.pi * s / total_steps))


class Sweep:
    def __init__(self, data, rng):
        self.xtr, self.ytr, self.xva, self.yva = data
        self.rng = rng
        self.records: list[TrialRecord] = []
        self.best_rmse = math.inf
        self.best_state = None

    def sample_config(self):
        r = self.rng
        return TrialConfig(
            depth=int(r.integers(1, 5)),
            width=int(r.choice([64, 128, 192])),
            dropout=float(r.choice([0.0, 0.05, 0.1])),
            optimizer=str(r.choice(["adamw", "sgd"])),
            lr=float(10 ** r.uniform(-3.5, -1.5)),
            weight_decay=float(r.choice([0.0, 1e-4, 1e-2])),
            total_steps=int(r.choice([360, 480])),
            warmup=int(r.choice([0, 20, 50])),
        )

    def run_trial(self, i, cfg):
        rec = TrialRecord(trial=i, config=cfg)
        model = ResMLP(self.xtr.shape[1], cfg)
        if cfg.optimizer == "adamw":
            opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        else:
            opt = torch.optim.SGD(model.parameters(), lr=cfg.lr * 10, momentum=0.9, weight_decay=cfg.weight_decay)
        base_lrs = [g["lr"] for g in opt.param_groups]
        mult = lr_multipliers(cfg.total_steps, cfg.warmup)
        xtr, ytr = torch.from_numpy(self.xtr), torch.from_numpy(self.ytr)
        t0 = time.time()
        for step in range(cfg.total_steps):
            for g, b in zip(opt.param_groups, base_lrs):
                g["lr"] = b * mult[step]
            idx = torch.from_numpy(self.rng.integers(0, len(xtr), cfg.batch))
            loss = F.mse_loss(model(xtr[idx]), ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gn = nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            if not math.isfinite(loss.item()):
                rec.notes["status"] = f"diverged at step {step}"
                break
            rec.losses.append(loss.item())
            rec.grad_norms.append(float(gn))
        model.eval()
        with torch.no_grad():
            pred = model(torch.from_numpy(self.xva))
            rec.val_rmse = float(torch.sqrt(F.mse_loss(pred, torch.from_numpy(self.yva))))
        rec.best_step = int(np.argmin(rec.losses)) if rec.losses else None
        rec.seconds = time.time() - t0
        if rec.val_rmse < self.best_rmse:
            self.best_rmse = rec.val_rmse
            self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            rec.notes["best"] = "yes"
        self.records.append(rec)
        return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=9)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    x, y = make_data(rng, 60000)
    n_tr = 50000
    sweep = Sweep((x[:n_tr], y[:n_tr], x[n_tr:], y[n_tr:]), rng)

    t0 = time.time()
    for i in range(args.trials):
        cfg = sweep.sample_config()
        rec = sweep.run_trial(i, cfg)
        print(f"trial {i:2d}  {cfg.optimizer:5s} depth {cfg.depth} width {cfg.width:3d} lr {cfg.lr:.1e}  "
              f"val RMSE {rec.val_rmse:.4f}  ({rec.seconds:.1f}s, {rec.seconds / max(len(rec.losses), 1) * 1e3:.1f} ms/step)  "
              f"best so far {sweep.best_rmse:.4f}", flush=True)

    best = min(sweep.records, key=lambda r: r.val_rmse)
    summary = json.dumps(best.model_dump(exclude={"losses", "grad_norms"}), indent=None)
    print(f"done in {time.time() - t0:.1f}s; schedules cached: {lr_multipliers.cache_info().currsize}; best: {summary}")


if __name__ == "__main__":
    main()
