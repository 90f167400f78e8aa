# expect: no_leak
# pattern: streaming anomaly detector keeps the recent per-tick records in a plain Python list (self.rows) and trims it in amortised fashion: rows are appended every tick and only when len(self.rows) reaches 2*size is `del self.rows[:-size]` run (running sums are corrected for the dropped rows), so memory climbs for the first ~quarter of the run and then saw-tooths between `size` and `2*size` records (NumPy-only server-fleet monitoring, no torch)
# step_ms: 3
"""Streaming anomaly detection over server-fleet metrics.

Every tick each host reports a vector of 32 metrics (CPU, run-queue, memory,
disk and network counters, per-endpoint latencies ...).  The detector keeps a
sliding window of recent ticks, scores new ticks with z-scores against the
window's running mean / std, and every few hundred batches refreshes a robust
(median / MAD) baseline from the raw window, which is what the alerting rules
use.  Consecutive anomalous ticks are merged into incidents.

Trimming the window one tick at a time would shift the whole list each tick,
so old records are dropped in bulk once the list has grown to twice the window.
"""
import argparse
import time
from collections import namedtuple

import numpy as np

N_METRICS = 32
Tick = namedtuple("Tick", "ts host vec")


class WindowDetector:
    def __init__(self, size, z_threshold=6.0, min_metrics=3):
        self.size = size
        self.z_threshold = z_threshold
        self.min_metrics = min_metrics
        self.rows = []
        self.sum = np.zeros(N_METRICS)
        self.sumsq = np.zeros(N_METRICS)
        self.median = None
        self.mad = None

    def add(self, ts, host, chunk):
        self.rows.extend(Tick(t, h, v) for t, h, v in zip(ts.tolist(), host.tolist(), chunk))
        c64 = chunk.astype(np.float64)
        self.sum += c64.sum(0)
        self.sumsq += (c64 ** 2).sum(0)
        if len(self.rows) >= 2 * self.size:
            old = np.stack([r.vec for r in self.rows[:-self.size]]).astype(np.float64)
            self.sum -= old.sum(0)
            self.sumsq -= (old ** 2).sum(0)
            del self.rows[:-self.size]

    def score(self, chunk):
        n = max(len(self.rows), 1)
        mean = self.sum / n
        std = np.sqrt(np.maximum(self.sumsq / n - mean ** 2, 1e-6))
        z = np.abs((chunk - mean) / std)
        return (z > self.z_threshold).sum(1) >= self.min_metrics

    def refresh_baseline(self):
        window = np.stack([r.vec for r in self.rows[-self.size:]])
        self.median = np.median(window, axis=0)
        self.mad = np.median(np.abs(window - self.median), axis=0) * 1.4826


class HostAlert:
    """Per-host alert state with hysteresis: ok -> pending -> firing -> ok."""

    __slots__ = ("state", "hits", "quiet", "fired")

    def __init__(self):
        self.state, self.hits, self.quiet, self.fired = "ok", 0, 0, 0

    def update(self, anomalous):
        if anomalous:
            self.hits += 1
            self.quiet = 0
            if self.state == "ok":
                self.state = "pending"
            elif self.state == "pending" and self.hits >= 2:
                self.state = "firing"
                self.fired += 1
        else:
            self.quiet += 1
            if self.quiet >= 20:
                self.state, self.hits = "ok", 0
        return self.state == "firing"


def metric_stream(rng, hosts, chunk):
    phase = rng.uniform(0, 2 * np.pi, size=N_METRICS)
    scale = rng.lognormal(0, 1, size=N_METRICS)
    host_bias = rng.normal(0, 0.3, size=(hosts, N_METRICS))
    t = 0
    while True:
        ts = t + np.arange(chunk)
        host = rng.integers(0, hosts, size=chunk)
        diurnal = np.sin(2 * np.pi * ts[:, None] / 86_400 * 60 + phase[None])
        vec = scale * (1 + 0.3 * diurnal + host_bias[host] + rng.normal(0, 0.1, size=(chunk, N_METRICS)))
        if rng.random() < 0.01:  # incident: a few metrics of a few ticks blow up
            rows = rng.integers(0, chunk, size=3)
            cols = rng.choice(N_METRICS, size=6, replace=False)
            vec[np.ix_(rows, cols)] *= rng.uniform(3, 8)
        yield ts, host, vec.astype(np.float32)
        t += chunk


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=9000)
    ap.add_argument("--chunk", type=int, default=100)
    ap.add_argument("--hosts", type=int, default=400)
    ap.add_argument("--window", type=int, default=100_000)
    ap.add_argument("--refresh-every", type=int, default=100)
    ap.add_argument("--log-every", type=int, default=2250)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    det = WindowDetector(args.window)
    stream = metric_stream(rng, args.hosts, args.chunk)
    alerts = [HostAlert() for _ in range(args.hosts)]
    flagged = 0
    t0 = time.time()
    for b in range(1, args.batches + 1):
        ts, host, vec = next(stream)
        if len(det.rows) >= 1000:
            anomalous = det.score(vec)
            flagged += int(anomalous.sum())
            for h, a in zip(host.tolist(), anomalous.tolist()):
                alerts[h].update(a)
        det.add(ts, host, vec)
        if b % args.refresh_every == 0:
            det.refresh_baseline()
        if b % args.log_every == 0:
            print(
                f"batch {b}/{args.batches}  ticks={b * args.chunk}  window={len(det.rows)}  "
                f"flagged={flagged}  firing={sum(a.state == 'firing' for a in alerts)}  "
                f"alerts fired={sum(a.fired for a in alerts)}  "
                f"median mad={np.median(det.mad):.3f}  ({time.time() - t0:.1f}s)"
            )
    print("done")


if __name__ == "__main__":
    main()
