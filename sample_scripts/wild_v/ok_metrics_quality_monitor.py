# expect: no_leak
# holder:
# pattern: data-quality monitor for a fleet metrics stream (pure Python + NumPy, no torch, no optimizer, ~1 ms per tick of 160 samples, code in main() + a QualityMonitor class); suspicious-looking: every sample's status word (quality bits + a rolling sequence counter in the upper bits) is turned into an enum.IntFlag, each series keeps a bisect-sorted list of its values for rolling quantiles, host names keep changing because of autoscaling (new series ids forever), and per-name metadata comes from functools.lru_cache; but the status word is masked to the 6 defined quality bits before QualityFlag(...) (at most 64 distinct pseudo-members), every series evicts values older than the 15-minute window from both its deque and its sorted list (bisect_left + del), series idle for 30 simulated minutes are swept out every 5 minutes, and the lru_cache is capped at 2048 entries, so memory grows while the windows fill during the first ~10% of the run and then stays flat as hosts churn
# step_ms: 1
"""Fleet metrics data-quality monitor.

Consumes the raw sample stream of the fleet metrics pipeline, validates
each sample's quality bits, and keeps rolling 15-minute quantiles per
series so that stuck sensors, sudden level shifts and noisy hosts can
be flagged.  Hosts are replaced continuously by the autoscaler; series
of hosts that stopped reporting are swept out.
"""
from __future__ import annotations

import argparse
import bisect
import enum
import functools
import itertools
import logging
import time
from collections import Counter, deque
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger("dq")

WINDOW_S = 15 * 60
IDLE_S = 30 * 60
METRICS = ("cpu", "mem", "disk_io", "net_rx", "latency_p99")


class QualityFlag(enum.IntFlag):
    OK = 0
    INTERPOLATED = 0x01
    CLAMPED = 0x02
    LATE = 0x04
    CLOCK_SKEW = 0x08
    COUNTER_RESET = 0x10
    PARTIAL = 0x20
    ALL = 0x3F


@functools.lru_cache(maxsize=2048)
def series_meta(name: str) -> tuple[str, str, float]:
    host, metric = name.rsplit("/", 1)
    pool = host.split("-")[0]
    scale = {"cpu": 100.0, "mem": 64.0, "disk_io": 500.0, "net_rx": 1000.0, "latency_p99": 250.0}[metric]
    return pool, metric, scale


@dataclass
class Series:
    window: deque = field(default_factory=deque)     # (ts, value)
    sorted_vals: list = field(default_factory=list)
    last_seen: float = 0.0
    flags: Counter = field(default_factory=Counter)

    def add(self, ts: float, v: float) -> None:
        self.window.append((ts, v))
        bisect.insort(self.sorted_vals, v)
        self.last_seen = ts
        cutoff = ts - WINDOW_S
        while self.window and self.window[0][0] < cutoff:
            _, old = self.window.popleft()
            i = bisect.bisect_left(self.sorted_vals, old)
            del self.sorted_vals[i]

    def quantile(self, q: float) -> float:
        if not self.sorted_vals:
            return float("nan")
        return self.sorted_vals[min(len(self.sorted_vals) - 1, int(q * len(self.sorted_vals)))]


class QualityMonitor:
    def __init__(self) -> None:
        self.series: dict[str, Series] = {}
        self.flag_counts: Counter = Counter()
        self.alerts: deque[tuple[float, str, str]] = deque(maxlen=500)
        self.swept = 0
        self.n_alerts = 0

    def ingest(self, ts: float, names: list[str], values: np.ndarray, status: np.ndarray) -> None:
        for name, v, word in zip(names, values.tolist(), status.tolist()):
            flags = QualityFlag(word & QualityFlag.ALL)
            if flags:
                for f in flags:
                    self.flag_counts[f.name] += 1
            pool, metric, scale = series_meta(name)
            s = self.series.get(name)
            if s is None:
                s = self.series[name] = Series()
            if flags & (QualityFlag.COUNTER_RESET | QualityFlag.CLOCK_SKEW):
                s.flags[flags] += 1
                continue
            x = v / scale
            n = len(s.sorted_vals)
            if n >= 12:
                med, p90 = s.quantile(0.5), s.quantile(0.9)
                if abs(x - med) > 6 * max(p90 - med, 1e-3):
                    self.alerts.append((ts, name, "level_shift"))
                    self.n_alerts += 1
            s.add(ts, x)

    def sweep(self, now: float) -> None:
        dead = [k for k, s in self.series.items() if now - s.last_seen > IDLE_S]
        for k in dead:
            del self.series[k]
        self.swept += len(dead)


class Fleet:
    """Autoscaled hosts: every few minutes some hosts are replaced by new ones."""

    def __init__(self, seed: int, n_hosts: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.ids = itertools.count()
        self.hosts = [self._new_host() for _ in range(n_hosts)]
        self.level = {h: self.rng.uniform(0.2, 0.8, len(METRICS)) for h in self.hosts}
        self.seq = 0

    def _new_host(self) -> str:
        pool = ("api", "batch", "cache", "db")[int(self.rng.integers(0, 4))]
        return f"{pool}-{next(self.ids):06d}"

    def churn(self, k: int) -> None:
        for _ in range(k):
            i = int(self.rng.integers(0, len(self.hosts)))
            del self.level[self.hosts[i]]
            self.hosts[i] = self._new_host()
            self.level[self.hosts[i]] = self.rng.uniform(0.2, 0.8, len(METRICS))

    def tick(self, n: int) -> tuple[list[str], np.ndarray, np.ndarray]:
        hi = self.rng.integers(0, len(self.hosts), n)
        mi = self.rng.integers(0, len(METRICS), n)
        names = [f"{self.hosts[h]}/{METRICS[m]}" for h, m in zip(hi.tolist(), mi.tolist())]
        scale = np.array([100.0, 64.0, 500.0, 1000.0, 250.0])[mi]
        base = np.array([self.level[self.hosts[h]][m] for h, m in zip(hi.tolist(), mi.tolist())])
        values = scale * np.clip(base + self.rng.normal(0, 0.05, n), 0, 2)
        bits = (self.rng.random((n, 6)) < [0.02, 0.01, 0.03, 0.002, 0.001, 0.01]) @ (1 << np.arange(6))
        self.seq += n
        seq = (self.seq + np.arange(n)) & 0x3FFFFFF
        status = (seq << 6) | bits
        return names, values, status.astype(np.int64)


def main() -> None:
    ap = argparse.ArgumentParser(description="fleet metrics data-quality monitor")
    ap.add_argument("--ticks", type=int, default=16000, help="one tick = one simulated second")
    ap.add_argument("--samples-per-tick", type=int, default=160)
    ap.add_argument("--hosts", type=int, default=600)
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    fleet = Fleet(args.seed, args.hosts)
    mon = QualityMonitor()
    t0 = last = time.perf_counter()
    for tick in range(1, args.ticks + 1):
        ts = float(tick)
        names, values, status = fleet.tick(args.samples_per_tick)
        mon.ingest(ts, names, values, status)
        if tick % 60 == 0:
            fleet.churn(4)
        if tick % 300 == 0:
            mon.sweep(ts)
        now = time.perf_counter()
        if now - last > 3.0 or tick == args.ticks:
            log.info("t=%5.0f min series=%d swept=%d alerts=%d flags=%s meta_cache=%d pseudo_members=%d "
                     "(%.2f ms/tick)", ts / 60, len(mon.series), mon.swept, mon.n_alerts,
                     dict(mon.flag_counts.most_common(3)), series_meta.cache_info().currsize,
                     len(QualityFlag._value2member_map_), 1000 * (now - t0) / tick)
            last = now


if __name__ == "__main__":
    main()
