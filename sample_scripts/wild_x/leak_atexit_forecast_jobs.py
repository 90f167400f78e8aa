# expect: leak
# holder: atexit|ForecastJob
# pattern: nightly per-SKU demand-forecasting batch (one ForecastJob per store-item series: lag/Fourier features, a small torch model fitted full-batch with torch.optim.Adam for 250 iterations, residual-bootstrap prediction paths in NumPy; ~90 ms per job, code in main() + a ForecastJob class); ForecastJob.__init__ calls atexit.register(self.flush) as a safety net so partial results reach the output file even if the batch crashes, and nothing ever unregisters it, so the interpreter's atexit registry keeps a bound method -> every finished job with its feature matrix, fitted model and 400x56 bootstrap paths (~0.7 MB per job) until shutdown
# step_ms: 90
"""Nightly demand-forecast batch for the store x item grid.

For every series we build lag / calendar features, fit a small regression
model, and simulate bootstrap paths for the 8-week horizon to get prediction
intervals.  Each job appends its result row to the output CSV when it
finishes; to be safe against crashes mid-batch the job also registers its
flush with atexit, so whatever was computed still reaches the file.
"""
import argparse
import atexit
import os
import shutil
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn

HISTORY = 1095  # three years of daily sales
HORIZON = 56
N_PATHS = 400
LAGS = (1, 2, 7, 14, 28)
N_FOURIER = 4


def make_features(y, t):
    cols = []
    for lag in LAGS:
        cols.append(np.concatenate([np.full(lag, y[:lag].mean()), y[:-lag]]))
    for k in range(1, N_FOURIER + 1):
        cols.append(np.sin(2 * np.pi * k * t / 7.0))
        cols.append(np.cos(2 * np.pi * k * t / 7.0))
        cols.append(np.sin(2 * np.pi * k * t / 365.25))
        cols.append(np.cos(2 * np.pi * k * t / 365.25))
    cols.append(t / len(t))
    return np.stack(cols, axis=1)


class ForecastJob:
    def __init__(self, series_id, y, out_path):
        self.series_id = series_id
        self.y = y
        self.out_path = out_path
        self.result = None
        self._flushed = False
        atexit.register(self.flush)  # never lose a finished forecast if the batch dies

    def fit(self, iters=250):
        t = np.arange(len(self.y), dtype=np.float64)
        self.X = make_features(self.y, t)
        self.mu, self.sd = self.X.mean(0), self.X.std(0) + 1e-6
        Xt = torch.tensor((self.X - self.mu) / self.sd, dtype=torch.float32)
        scale = float(self.y.std() + 1e-6)
        yt = torch.tensor((self.y - self.y.mean()) / scale, dtype=torch.float32)
        self.model = nn.Sequential(nn.Linear(Xt.shape[1], 32), nn.Tanh(), nn.Linear(32, 1))
        opt = torch.optim.Adam(self.model.parameters(), lr=0.03)
        for _ in range(iters):
            opt.zero_grad()
            loss = ((self.model(Xt).squeeze(1) - yt) ** 2).mean()
            loss.backward()
            opt.step()
        with torch.no_grad():
            fitted = self.model(Xt).squeeze(1).numpy() * scale + self.y.mean()
        self.residuals = self.y - fitted
        self.fitted = fitted
        return float(loss)

    def simulate(self, rng):
        base = self.fitted[-HORIZON:][::-1].copy()  # naive seasonal carry-forward of the fit
        draws = rng.choice(self.residuals[-365:], size=(N_PATHS, HORIZON))
        self.paths = np.maximum(base[None, :] + np.cumsum(draws, axis=1) * 0.15, 0.0)
        lo, mid, hi = np.percentile(self.paths.sum(1), [10, 50, 90])
        self.result = (self.series_id, mid, lo, hi)
        return self.result

    def flush(self):
        if self._flushed or self.result is None:
            return
        if os.path.isdir(os.path.dirname(self.out_path)):
            with open(self.out_path, "a") as fh:
                fh.write("%s,%.2f,%.2f,%.2f\n" % self.result)
        self._flushed = True


def synth_series(rng, sid):
    t = np.arange(HISTORY)
    level = rng.gamma(2.0, 8.0)
    weekly = 1.0 + 0.3 * np.sin(2 * np.pi * (t + sid % 7) / 7.0)
    yearly = 1.0 + 0.2 * np.cos(2 * np.pi * t / 365.25)
    trend = 1.0 + rng.normal(0, 0.0003) * t
    return rng.poisson(level * weekly * yearly * np.maximum(trend, 0.1)).astype(np.float64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=220, help="number of series to forecast")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(5)
    out_dir = tempfile.mkdtemp(prefix="forecast_")
    out_path = os.path.join(out_dir, "forecasts.csv")

    total = 0.0
    t0 = time.time()
    for sid in range(args.steps):
        job = ForecastJob(f"store{sid // 50:03d}_item{sid % 50:03d}", synth_series(rng, sid), out_path)
        job.fit()
        _, mid, lo, hi = job.simulate(rng)
        job.flush()
        total += mid
        if (sid + 1) % 40 == 0:
            print(f"{sid + 1:4d} series  8-week demand so far {total:,.0f}  {time.time() - t0:.1f}s", flush=True)
    with open(out_path) as fh:
        n_rows = sum(1 for _ in fh)
    print(f"wrote {n_rows} forecasts")
    shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
