# expect: leak
# holder: audit_stream|train_stream
# pattern: streaming batch generator is split with itertools.tee into a training branch and an "audit" branch that is only read after training; tee's shared buffer keeps every batch dict (numpy windows) yielded so far
# step_ms: 6
"""Online training of a store-level demand forecaster.

Training windows are produced on the fly by a generator that simulates daily
sales for a few hundred stores (level, weekly seasonality, promotions, noise).
A second view of the same stream is used after training to audit the target
distribution the model actually saw against the reference histogram.
"""
import itertools
import time

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(0)

N_BATCHES = 2000
BATCH = 256
WINDOW = 56
N_STORES = 400
SEED = 11


def sales_windows(n_batches, batch_size, window, n_stores, seed):
    rng = np.random.default_rng(seed)
    level = rng.gamma(3.0, 20.0, size=n_stores)
    weekly = 1.0 + 0.25 * np.sin(2 * np.pi * np.arange(7) / 7.0)
    promo_lift = rng.uniform(1.1, 1.6, size=n_stores)
    for step in range(n_batches):
        stores = rng.integers(0, n_stores, size=batch_size)
        start_day = rng.integers(0, 7, size=batch_size)
        days = (start_day[:, None] + np.arange(window + 1)[None, :]) % 7
        promo = rng.random((batch_size, window + 1)) < 0.08
        mean = level[stores, None] * weekly[days] * np.where(promo, promo_lift[stores, None], 1.0)
        sales = rng.poisson(mean).astype(np.float32)
        x = np.log1p(sales[:, :-1])
        y = np.log1p(sales[:, -1])
        yield {
            "step": step,
            "x": x,
            "promo": promo[:, :-1].astype(np.float32),
            "y": y,
            "store": stores,
        }


class Forecaster(nn.Module):
    def __init__(self, window, hidden=128):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(2 * window, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x, promo):
        return self.net(torch.cat([x, promo], dim=1)).squeeze(1)


def audit_targets(stream, bins):
    hist = np.zeros(len(bins) - 1, np.int64)
    n = 0
    for batch in stream:
        hist += np.histogram(batch["y"], bins=bins)[0]
        n += len(batch["y"])
    return hist / max(n, 1)


def main():
    stream = sales_windows(N_BATCHES, BATCH, WINDOW, N_STORES, SEED)
    train_stream, audit_stream = itertools.tee(stream)

    model = Forecaster(WINDOW)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=N_BATCHES)
    loss_fn = nn.SmoothL1Loss()

    ema_loss = None
    start = last = time.perf_counter()
    for batch in train_stream:
        x = torch.from_numpy(batch["x"])
        promo = torch.from_numpy(batch["promo"])
        y = torch.from_numpy(batch["y"])
        pred = model(x, promo)
        loss = loss_fn(pred, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()

        value = loss.item()
        ema_loss = value if ema_loss is None else 0.98 * ema_loss + 0.02 * value
        now = time.perf_counter()
        if now - last >= 1.0:
            print(
                f"[{now - start:5.1f}s] step {batch['step'] + 1}/{N_BATCHES} "
                f"loss={ema_loss:.4f} lr={sched.get_last_lr()[0]:.2e}",
                flush=True,
            )
            last = now

    bins = np.linspace(0.0, 8.0, 33)
    seen = audit_targets(audit_stream, bins)
    reference = np.histogram(
        np.log1p(np.random.default_rng(0).poisson(60.0, size=100_000)), bins=bins
    )[0] / 100_000
    tv = 0.5 * np.abs(seen - reference).sum()
    print(f"done in {time.perf_counter() - start:.1f}s, final loss {ema_loss:.4f}, "
          f"target TV distance to reference {tv:.3f}")


if __name__ == "__main__":
    main()
