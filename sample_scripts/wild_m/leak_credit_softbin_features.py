# expect: leak
# holder: _memo|soft_bin.__defaults__
# pattern: soft_bin() memoizes one soft-bin vector per (column, value rounded to 0.01) in a mutable default-argument dict _memo; the finite key space fills early, but missing cells arrive as float NaN (a new float object per cell from .tolist()) and NaN != NaN, so every missing cell of every batch inserts a new key with its own 33-float vector (tabular MLP, torch.optim.Adam)
# step_ms: 23
"""Default-risk classifier on soft-binned numeric bureau features.

Every numeric column is standardised and turned into a soft one-hot vector over
32 Gaussian bins (plus a "missing" indicator), which works noticeably better
than raw values for the heavy-tailed bureau attributes.  Bin vectors are
memoised per rounded value because the encoder is pure Python and the same
rounded values come up over and over again.

The data stream is synthetic: a fixed random "ground truth" scorecard generates
labels for freshly sampled applicants, with realistic missingness on the
delinquency / inquiry columns.
"""
import argparse
import math
import time

import numpy as np
import torch
from torch import nn

N_BINS = 32
BIN_CENTERS = np.linspace(-4.0, 4.0, N_BINS).astype(np.float32)
COLUMNS = [
    "age", "income_log", "debt_to_income", "revolving_util", "open_lines",
    "months_since_delinquency", "inquiries_6m", "credit_history_len",
    "installment_ratio", "mortgage_balance_log", "card_balance_log",
    "months_since_inquiry", "num_late_30d", "num_late_60d", "savings_log",
    "employment_years",
]
# typical share of missing values per column (bureau files are sparse on these)
MISSING_RATE = {
    "months_since_delinquency": 0.45,
    "months_since_inquiry": 0.30,
    "mortgage_balance_log": 0.20,
    "employment_years": 0.08,
}


def soft_bin(col, value, temperature=0.35, _memo={}):
    """Soft one-hot encoding of a standardised value (last slot = missing flag)."""
    v = min(max(value, -4.0), 4.0)
    key = (col, round(v, 2))
    vec = _memo.get(key)
    if vec is None:
        vec = np.zeros(N_BINS + 1, dtype=np.float32)
        if math.isnan(v):
            vec[N_BINS] = 1.0
        else:
            w = np.exp(-((BIN_CENTERS - v) ** 2) / (2.0 * temperature ** 2))
            vec[:N_BINS] = w / w.sum()
        _memo[key] = vec
    return vec


def encode_batch(x):
    """(B, F) float array with NaNs -> (B, F * (N_BINS + 1)) float32 tensor."""
    b, f = x.shape
    out = np.empty((b, f, N_BINS + 1), dtype=np.float32)
    for i, row in enumerate(x.tolist()):
        for j, value in enumerate(row):
            out[i, j] = soft_bin(j, value)
    return torch.from_numpy(out.reshape(b, -1))


class ApplicantStream:
    def __init__(self, seed, batch_size):
        self.rng = np.random.default_rng(seed)
        self.batch_size = batch_size
        f = len(COLUMNS)
        self.mix = self.rng.normal(size=(f, f)) * 0.3 + np.eye(f)
        self.true_w = self.rng.normal(size=f)
        self.missing = np.array([MISSING_RATE.get(c, 0.0) for c in COLUMNS])

    def next_batch(self):
        z = self.rng.standard_t(df=5, size=(self.batch_size, len(COLUMNS)))
        x = z @ self.mix
        x = (x - x.mean(0)) / (x.std(0) + 1e-6)
        logit = x @ self.true_w * 0.8 + 0.3 * np.sin(3 * x[:, 0]) - 1.0
        y = (self.rng.random(self.batch_size) < 1 / (1 + np.exp(-logit))).astype(np.float32)
        mask = self.rng.random(x.shape) < self.missing
        x[mask] = np.nan
        return x, y


def build_model(in_dim, hidden):
    return nn.Sequential(
        nn.Linear(in_dim, hidden), nn.ReLU(), nn.Dropout(0.1),
        nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, 1),
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=680)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--log-every-s", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    stream = ApplicantStream(args.seed, args.batch_size)
    model = build_model(len(COLUMNS) * (N_BINS + 1), args.hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=1e-5)
    loss_fn = nn.BCEWithLogitsLoss()

    t0 = last_log = time.time()
    run_loss, run_acc, n = 0.0, 0.0, 0
    for step in range(1, args.steps + 1):
        x_raw, y_np = stream.next_batch()
        x = encode_batch(x_raw)
        y = torch.from_numpy(y_np)

        logits = model(x).squeeze(1)
        loss = loss_fn(logits, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

        run_loss += loss.item()
        run_acc += ((logits.detach() > 0).float() == y).float().mean().item()
        n += 1
        now = time.time()
        if now - last_log >= args.log_every_s:
            print(f"step {step:5d}  loss {run_loss / n:.4f}  acc {run_acc / n:.3f}  "
                  f"({(now - t0) / step * 1000:.1f} ms/step)", flush=True)
            run_loss, run_acc, n = 0.0, 0.0, 0
            last_log = now

    print(f"done: {args.steps} steps in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
