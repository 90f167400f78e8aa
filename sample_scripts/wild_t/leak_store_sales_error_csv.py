# expect: leak
# holder: debug_csv
# pattern: Kaggle-style store-item sales forecasting MLP (torch.optim.Adam, ~1.5 ms steps, everything in main()); for error analysis every step formats the 256 worst-predicted rows of the batch as CSV lines and appends them with `debug_csv += ...` to a main()-local str that is dumped to worst_rows.csv (overwritten) at every epoch end; the author meant it to hold one epoch's rows but never resets it after the dump, so the string grows by ~13 KB per step (~130 MB over the run) for the whole run
# step_ms: 1.5
"""Store/item daily sales forecaster (tabular MLP on lag features).

Quick competition baseline: synthetic M5-like data, lag / rolling / calendar
features built with numpy, a small MLP trained on log1p(sales) with Adam,
RMSLE on the last 28 days as validation.  The worst rows of every batch are
written out so they can be inspected in a spreadsheet.
"""
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)

N_STORES = 10
N_ITEMS = 120
N_DAYS = 420
HORIZON = 28
LAGS = (7, 14, 28)
WINDOWS = (7, 28)
BATCH = 512
EPOCHS = 12
N_WORST = 256

STATES = ["CA", "TX", "WI"]
CATS = ["FOODS", "HOBBIES", "HOUSEHOLD"]


def make_sales(rng):
    n_series = N_STORES * N_ITEMS
    t = np.arange(N_DAYS)
    level = rng.gamma(2.0, 2.0, size=(n_series, 1))
    trend = 1.0 + rng.normal(0, 0.0008, size=(n_series, 1)) * t
    weekly = 1.0 + 0.3 * np.sin(2 * np.pi * (t[None, :] + rng.integers(0, 7, (n_series, 1))) / 7)
    yearly = 1.0 + 0.15 * np.sin(2 * np.pi * t[None, :] / 365.0)
    promo = (rng.random((n_series, N_DAYS)) < 0.05).astype(np.float32)
    lam = level * trend * weekly * yearly * (1 + 0.8 * promo)
    sales = rng.poisson(np.clip(lam, 0.01, None)).astype(np.float32)
    return sales, promo


def series_names():
    names = []
    for s in range(N_STORES):
        store = f"{STATES[s % 3]}_{s // 3 + 1}"
        for i in range(N_ITEMS):
            names.append(f"{CATS[i % 3]}_{i % 7 + 1}_{i:03d}_{store}")
    return names


def build_features(sales, promo):
    n_series, n_days = sales.shape
    start = max(max(LAGS), max(WINDOWS)) + 1
    days = np.arange(start, n_days)
    log_sales = np.log1p(sales)
    csum = np.concatenate([np.zeros((n_series, 1), np.float32), np.cumsum(log_sales, axis=1)], axis=1)
    feats = []
    for lag in LAGS:
        feats.append(log_sales[:, days - lag])
    for w in WINDOWS:
        m = (csum[:, days] - csum[:, days - w]) / w
        feats.append(m)
    dow = days % 7
    for k in range(7):
        feats.append(np.broadcast_to((dow == k).astype(np.float32), (n_series, len(days))))
    feats.append(promo[:, days])
    feats.append(np.broadcast_to(np.sin(2 * np.pi * days / 365.0).astype(np.float32), (n_series, len(days))))
    feats.append(np.broadcast_to(np.cos(2 * np.pi * days / 365.0).astype(np.float32), (n_series, len(days))))
    store_id = np.repeat(np.arange(N_STORES), N_ITEMS)
    for s in range(N_STORES):
        feats.append(np.broadcast_to((store_id == s).astype(np.float32)[:, None], (n_series, len(days))))
    X = np.stack(feats, axis=-1).astype(np.float32)  # (series, days, F)
    y = log_sales[:, days]
    sid = np.broadcast_to(np.arange(n_series)[:, None], y.shape)
    day = np.broadcast_to(days[None, :], y.shape)
    return X, y, sid, day


class SalesMLP(nn.Module):
    def __init__(self, n_in):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_in, 128), nn.ReLU(),
            nn.Linear(128, 64), nn.ReLU(),
            nn.Linear(64, 1),
        )

    def forward(self, x):
        return self.net(x).squeeze(-1)


def main():
    rng = np.random.default_rng(7)
    torch.manual_seed(7)
    t0 = time.time()
    sales, promo = make_sales(rng)
    names = series_names()
    X, y, sid, day = build_features(sales, promo)
    n_days_feat = X.shape[1]
    split = n_days_feat - HORIZON
    Xtr = X[:, :split].reshape(-1, X.shape[-1]).copy()
    ytr = y[:, :split].reshape(-1).copy()
    sid_tr = sid[:, :split].reshape(-1).copy()
    day_tr = day[:, :split].reshape(-1).copy()
    Xva = torch.from_numpy(X[:, split:].reshape(-1, X.shape[-1]).copy())
    yva = torch.from_numpy(y[:, split:].reshape(-1).copy())
    del X, y, sid, day, sales, promo
    print(f"train rows {len(ytr):,}  valid rows {len(yva):,}  features {Xtr.shape[1]}  "
          f"({time.time() - t0:.1f}s)")

    mu = Xtr.mean(0)
    sd = Xtr.std(0) + 1e-6
    Xtr = (Xtr - mu) / sd
    Xva = (Xva - torch.from_numpy(mu)) / torch.from_numpy(sd)
    Xtr_t = torch.from_numpy(Xtr)
    ytr_t = torch.from_numpy(ytr)

    model = SalesMLP(Xtr.shape[1])
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.MSELoss()

    out_dir = tempfile.mkdtemp(prefix="sales_dbg_")
    debug_csv = "epoch,step,id,d,y_true,y_pred,abs_err\n"
    steps_per_epoch = len(ytr_t) // BATCH
    step = 0
    for epoch in range(EPOCHS):
        model.train()
        perm = torch.randperm(len(ytr_t))
        run_loss = 0.0
        te = time.time()
        for b in range(steps_per_epoch):
            idx = perm[b * BATCH:(b + 1) * BATCH]
            xb, yb = Xtr_t[idx], ytr_t[idx]
            pred = model(xb)
            loss = loss_fn(pred, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            run_loss += loss.item()
            step += 1

            err = (pred.detach() - yb).abs()
            worst = torch.topk(err, N_WORST).indices
            rows = idx[worst].tolist()
            yt = yb[worst].tolist()
            yp = pred.detach()[worst].tolist()
            ee = err[worst].tolist()
            debug_csv += "".join(
                f"{epoch},{step},{names[sid_tr[r]]},d_{day_tr[r]},{a:.3f},{p:.3f},{e:.3f}\n"
                for r, a, p, e in zip(rows, yt, yp, ee)
            )
            if b % 400 == 0:
                print(f"  epoch {epoch} step {b:4d}  loss {loss.item():.4f}")

        model.eval()
        with torch.no_grad():
            pv = model(Xva)
            rmsle = torch.sqrt(((pv - yva) ** 2).mean()).item()
        with open(os.path.join(out_dir, "worst_rows.csv"), "w") as fh:
            fh.write(debug_csv)
        print(f"epoch {epoch}: train mse {run_loss / steps_per_epoch:.4f}  valid rmsle {rmsle:.4f}  "
              f"({time.time() - te:.1f}s)")

    size_mb = os.path.getsize(os.path.join(out_dir, "worst_rows.csv")) / 1e6
    print(f"done in {time.time() - t0:.1f}s; debug dump {size_mb:.1f} MB in {out_dir}")
    for f in os.listdir(out_dir):
        os.remove(os.path.join(out_dir, f))
    os.rmdir(out_dir)


if __name__ == "__main__":
    main()
