# expect: leak
# holder: history
# pattern: generator pipeline shards -> rolling features -> batches -> rewindable(); the rewindable() generator appends every batch it yields to its local list `history` so the trainer can .send(n) to rewind after a loss spike, but only the last few are ever replayed and the list is never trimmed, so the suspended generator frame keeps every (256x64 float32 + targets) batch alive
# step_ms: 22
"""Streaming demand-forecast regressor fed by a generator pipeline.

The data path is a chain of plain generators:

    read_shards()      -> raw (rows x sensors) arrays, one per shard
    rolling_features() -> per-row features: value, rolling mean/std, lags
    batched()          -> fixed-size (x, y) minibatches
    rewindable()       -> lets the trainer say "give me the last n again"

When the loss jumps (bad shard, LR too high) the trainer sends an int
into the pipeline and the last few batches are replayed after the learning
rate has been cut.  Everything is synthetic so it runs anywhere.
"""
import time

import numpy as np
import torch
from torch import nn

torch.set_num_threads(1)
torch.manual_seed(0)

N_SENSORS = 8
N_LAGS = 4
FEAT_DIM = N_SENSORS * (3 + N_LAGS)
BATCH = 256
N_STEPS = 800


def read_shards(rows_per_shard=2048, seed=0):
    rng = np.random.default_rng(seed)
    t = 0
    while True:
        tt = np.arange(t, t + rows_per_shard, dtype=np.float32)[:, None]
        season = np.sin(2 * np.pi * tt / 288.0 + np.arange(N_SENSORS) * 0.4)
        raw = season + 0.3 * rng.standard_normal((rows_per_shard, N_SENSORS)).astype(np.float32)
        if rng.random() < 0.03:
            raw[rng.integers(0, rows_per_shard, 50)] *= 25.0  # glitchy shard
        t += rows_per_shard
        yield raw.astype(np.float32)


def rolling_features(shards, win=24):
    carry = None
    for raw in shards:
        if carry is not None:
            raw = np.concatenate([carry, raw])
        csum = np.cumsum(raw, axis=0)
        csq = np.cumsum(raw * raw, axis=0)
        n = raw.shape[0]
        for i in range(win, n - 1):
            s = csum[i] - csum[i - win]
            sq = csq[i] - csq[i - win]
            mean = s / win
            std = np.sqrt(np.maximum(sq / win - mean * mean, 1e-6))
            lags = raw[i - N_LAGS:i].ravel()
            feat = np.concatenate([raw[i], mean, std, lags])
            yield feat, raw[i + 1].mean()
        carry = raw[-win - 1:]


def batched(rows, size):
    xs, ys = [], []
    for feat, target in rows:
        xs.append(feat)
        ys.append(target)
        if len(xs) == size:
            yield np.stack(xs).astype(np.float32), np.asarray(ys, dtype=np.float32)
            xs, ys = [], []


def rewindable(stream):
    """Yield items from ``stream``; ``send(n)`` replays the last n items first."""
    history = []
    for item in stream:
        history.append(item)
        n = yield item
        while n:
            replay = history[-n:]
            n = None
            for old in replay:
                n = yield old
                if n:
                    break


def main():
    model = nn.Sequential(nn.Linear(FEAT_DIM, 512), nn.ReLU(),
                          nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    pipeline = rewindable(batched(rolling_features(read_shards()), BATCH))

    ema = None
    rewinds = 0
    cooldown = 0
    t0 = time.time()
    last_print = t0
    x_np, y_np = next(pipeline)
    for step in range(N_STEPS):
        x = torch.from_numpy(x_np)
        y = torch.from_numpy(y_np)
        pred = model(x).squeeze(1)
        loss = torch.nn.functional.mse_loss(pred, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        lv = loss.item()
        spike = ema is not None and lv > 4.0 * ema and step > 50 and cooldown == 0
        cooldown = max(0, cooldown - 1)
        ema = lv if ema is None else 0.98 * ema + 0.02 * min(lv, 4.0 * ema)
        if spike:
            rewinds += 1
            cooldown = 25
            for g in opt.param_groups:
                g["lr"] = max(g["lr"] * 0.7, 1e-4)
            x_np, y_np = pipeline.send(3)
        else:
            x_np, y_np = next(pipeline)
        now = time.time()
        if now - last_print > 1.0:
            last_print = now
            print(f"step {step:4d} loss {lv:.4f} ema {ema:.4f} rewinds {rewinds} "
                  f"({now - t0:.1f}s)", flush=True)
    print(f"done in {time.time() - t0:.1f}s, {rewinds} rewinds")


if __name__ == "__main__":
    main()
