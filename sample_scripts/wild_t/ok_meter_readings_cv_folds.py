# expect: no_leak
# pattern: Kaggle-style building energy forecasting script with everything at module top level (MLP on lag/rolling/weather features, torch.optim.Adam, ~1.5 ms steps); sliding-window time-series CV with 6 equally sized folds: each fold trains a fresh model and optimizer for 3 epochs over 15 chronological chunks of its 330-day window; the standardised float32 feature chunks are built during the first epoch and appended to a fold-local chunk_cache list (~77 MB when complete) that later epochs re-use, then the fold writes its out-of-fold predictions into a preallocated oof array and does `del chunk_cache, ...; gc.collect()`, so RSS ramps up during the first third of every fold, holds, and drops at the fold end: a sawtooth with one tooth per fold at the same height (only the small oof array and a list of fold scores persist)
# step_ms: 1.5
"""ASHRAE-style daily meter reading forecast, sliding-window CV.

Synthetic data: 1300 buildings x 1100 days of meter readings driven by
temperature (heating/cooling degree days), weekly occupancy and building size.
Features: lags, rolling means, calendar, weather.  Target: log1p(reading).
"""
import gc
import math
import time

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)

N_BUILDINGS = 1300
N_DAYS = 1100
TRAIN_DAYS = 330
VALID_DAYS = 60
N_FOLDS = 6
BATCH = 512
LAGS = (1, 2, 3, 7, 14, 28)
ROLL = (7, 14, 28, 56)

t_start = time.time()
rng = np.random.default_rng(2024)
torch.manual_seed(2024)

# ---- synthetic raw data -------------------------------------------------
days = np.arange(N_DAYS)
site = rng.integers(0, 16, N_BUILDINGS)
temp_site = (12 + 11 * np.sin(2 * np.pi * (days[None, :] - 100) / 365.25)
             + rng.normal(0, 3, (16, N_DAYS)).cumsum(1) * 0.15)
temp = temp_site[site]
size = rng.lognormal(9, 0.8, N_BUILDINGS)
use = rng.integers(0, 5, N_BUILDINGS)
heat = np.maximum(15 - temp, 0) * rng.uniform(0.5, 2.0, (N_BUILDINGS, 1))
cool = np.maximum(temp - 21, 0) * rng.uniform(0.2, 1.5, (N_BUILDINGS, 1))
weekday = (days % 7 < 5).astype(np.float64)
occupancy = np.where(use[:, None] == 2, 1.0, 0.4 + 0.6 * weekday[None, :])
reading = (size[:, None] / 1e4) * (5 + heat + cool) * occupancy * rng.lognormal(0, 0.15, (N_BUILDINGS, N_DAYS))
target = np.log1p(reading)
print(f"raw data ready: {N_BUILDINGS} buildings x {N_DAYS} days ({time.time() - t_start:.1f}s)")

csum = np.concatenate([np.zeros((N_BUILDINGS, 1)), np.cumsum(target, axis=1)], axis=1)


def features_for(day_from, day_to):
    d = np.arange(day_from, day_to)
    cols = []
    for lag in LAGS:
        cols.append(target[:, d - lag])
    for w in ROLL:
        cols.append((csum[:, d] - csum[:, d - w]) / w)
    cols.append(temp[:, d])
    cols.append(temp[:, d - 1])
    cols.append(np.maximum(15 - temp[:, d], 0))
    cols.append(np.maximum(temp[:, d] - 21, 0))
    for k in range(7):
        cols.append(np.broadcast_to((d % 7 == k).astype(np.float64), (N_BUILDINGS, len(d))))
    cols.append(np.broadcast_to(np.sin(2 * np.pi * d / 365.25), (N_BUILDINGS, len(d))))
    cols.append(np.broadcast_to(np.cos(2 * np.pi * d / 365.25), (N_BUILDINGS, len(d))))
    cols.append(np.broadcast_to(np.log(size)[:, None], (N_BUILDINGS, len(d))))
    for u in range(5):
        cols.append(np.broadcast_to((use == u).astype(np.float64)[:, None], (N_BUILDINGS, len(d))))
    for s in range(16):
        cols.append(np.broadcast_to((site == s).astype(np.float64)[:, None], (N_BUILDINGS, len(d))))
    X = np.stack(cols, axis=-1).reshape(-1, len(cols)).astype(np.float32)
    y = target[:, d].reshape(-1).astype(np.float32)
    return X, y


first_day = max(max(LAGS), max(ROLL)) + 1
fold_starts = np.linspace(first_day, N_DAYS - TRAIN_DAYS - VALID_DAYS, N_FOLDS).astype(int)
oof = np.full((N_BUILDINGS, N_DAYS), np.nan, np.float32)
fold_scores = []

CHUNK_DAYS = 22
EPOCHS = 3
STEPS_PER_CHUNK = 38

for fold, start in enumerate(fold_starts):
    t_fold = time.time()
    # scaling statistics from four weeks spread over the window
    X0 = np.concatenate([features_for(d, d + 7)[0]
                         for d in np.linspace(start, start + TRAIN_DAYS - 7, 4).astype(int)])
    mu, sd = X0.mean(0), X0.std(0) + 1e-3
    del X0
    X_va, y_va = features_for(start + TRAIN_DAYS, start + TRAIN_DAYS + VALID_DAYS)
    Xv, yv = torch.from_numpy((X_va - mu) / sd), torch.from_numpy(y_va)

    model = nn.Sequential(nn.Linear(X_va.shape[1], 192), nn.SiLU(), nn.Linear(192, 96), nn.SiLU(),
                          nn.Linear(96, 1))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3, weight_decay=1e-6)
    n_chunks = TRAIN_DAYS // CHUNK_DAYS
    total_steps = EPOCHS * n_chunks * STEPS_PER_CHUNK
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, total_steps)
    chunk_cache = []  # features are built on the first pass and re-used by later epochs
    running, step = 0.0, 0
    for epoch in range(EPOCHS):
        for c in range(n_chunks):
            if epoch == 0:
                d0 = start + c * CHUNK_DAYS
                Xc, yc = features_for(d0, d0 + CHUNK_DAYS)
                chunk_cache.append((torch.from_numpy((Xc - mu) / sd), torch.from_numpy(yc)))
            # sample from the current chunk and everything seen before it (keeps time order early on)
            hi = len(chunk_cache) if epoch == 0 else n_chunks
            for _ in range(STEPS_PER_CHUNK):
                Xt, yt = chunk_cache[int(torch.randint(0, hi, (1,)))]
                idx = torch.randint(0, len(yt), (BATCH,))
                pred = model(Xt[idx]).squeeze(-1)
                loss = ((pred - yt[idx]) ** 2).mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sched.step()
                running += loss.item()
                step += 1
                if step % 500 == 0:
                    print(f"  fold {fold} epoch {epoch} step {step:5d}  train mse {running / 500:.4f}")
                    running = 0.0

    with torch.no_grad():
        pv = torch.cat([model(Xv[i:i + 8192]).squeeze(-1) for i in range(0, len(Xv), 8192)])
    rmsle = math.sqrt(((pv - yv) ** 2).mean().item())
    oof[:, start + TRAIN_DAYS:start + TRAIN_DAYS + VALID_DAYS] = pv.numpy().reshape(N_BUILDINGS, VALID_DAYS)
    fold_scores.append(rmsle)
    print(f"fold {fold}: days {start}-{start + TRAIN_DAYS + VALID_DAYS}  valid rmsle {rmsle:.4f}  "
          f"rows {sum(len(c[1]) for c in chunk_cache):,}  ({time.time() - t_fold:.1f}s)")

    del chunk_cache, Xt, yt, X_va, y_va, Xv, yv, model, opt, sched, pv
    gc.collect()

covered = np.isfinite(oof)
print(f"CV rmsle {np.mean(fold_scores):.4f} +- {np.std(fold_scores):.4f}; oof coverage {covered.mean():.2%}; "
      f"total {time.time() - t_start:.1f}s")
