# expect: no_leak
# pattern: pure-Python + NumPy online feature store built as a small LSM tree (no torch): per-user 64-d float32 feature updates go into a dict memtable that is flushed into immutable sorted runs (int64 key array + float32 value matrix), and whenever more than 6 runs exist they are merged into one, keeping only the newest version of every key; the user base is onboarded over the first 45% of the stream (active ids grow linearly to 140k), so the store grows with the number of distinct users and then stops growing: later writes only overwrite existing keys, and compaction folds the duplicate versions away (sawtooth between compactions on a flat baseline)
# step_ms: 1.5
"""Online user-feature store (LSM style) feeding a linear propensity scorer.

Every tick a micro-batch of events updates users' exponentially-decayed
feature vectors (read-modify-write through the store) and a batch of scoring
requests reads features for a linear model.
"""
import logging
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np

logging.basicConfig(level=logging.INFO, format="%(levelname).1s %(message)s")
log = logging.getLogger("lsm")

DIM = 64
MAX_USERS = 140_000
ONBOARD_FRAC = 0.45
TICKS = 12_000
WRITES_PER_TICK = 112
READS_PER_TICK = 96
MEMTABLE_LIMIT = 6_000
MAX_RUNS = 6


@dataclass
class Run:
    keys: np.ndarray      # sorted int64
    values: np.ndarray    # float32 (n, DIM)
    seq: int              # flush sequence number (higher = newer)

    @property
    def nbytes(self):
        return self.keys.nbytes + self.values.nbytes


class LSMStore:
    def __init__(self):
        self.memtable = {}
        self.runs = []          # newest first
        self._seq = 0
        self.stats = Counter()

    def put(self, key, vec):
        self.memtable[key] = vec
        if len(self.memtable) >= MEMTABLE_LIMIT:
            self.flush()

    def get(self, key):
        v = self.memtable.get(key)
        if v is not None:
            self.stats["mem_hit"] += 1
            return v
        for run in self.runs:
            i = np.searchsorted(run.keys, key)
            if i < len(run.keys) and run.keys[i] == key:
                self.stats["run_hit"] += 1
                return run.values[i]
        self.stats["miss"] += 1
        return None

    def flush(self):
        keys = np.fromiter(self.memtable.keys(), dtype=np.int64, count=len(self.memtable))
        vals = np.stack(list(self.memtable.values())).astype(np.float32)
        order = np.argsort(keys, kind="stable")
        self._seq += 1
        self.runs.insert(0, Run(keys[order], vals[order], self._seq))
        self.memtable = {}
        self.stats["flushes"] += 1
        if len(self.runs) > MAX_RUNS:
            self.compact()

    def compact(self):
        # newest run first, so after a stable sort the first occurrence of a key is its newest
        # version; only the keys are concatenated, values are gathered run by run
        keys = np.concatenate([r.keys for r in self.runs])
        src_run = np.repeat(np.arange(len(self.runs)), [len(r.keys) for r in self.runs])
        src_row = np.concatenate([np.arange(len(r.keys)) for r in self.runs])
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        first = np.ones(len(sorted_keys), dtype=bool)
        first[1:] = sorted_keys[1:] != sorted_keys[:-1]
        pick = order[first]
        values = np.empty((len(pick), DIM), dtype=np.float32)
        for ri, run in enumerate(self.runs):
            sel = src_run[pick] == ri
            values[sel] = run.values[src_row[pick[sel]]]
        merged = Run(sorted_keys[first], values, self._seq)
        self.stats["dropped_versions"] += int((~first).sum())
        self.runs = [merged]
        self.stats["compactions"] += 1

    def store_bytes(self):
        return sum(r.nbytes for r in self.runs) + len(self.memtable) * (DIM * 4 + 100)


def user_event_features(rng, n):
    """Synthetic event embedding: category one-hot-ish mixture + dwell/price signals."""
    cat = rng.integers(0, 16, n)
    x = rng.normal(0, 0.1, (n, DIM)).astype(np.float32)
    x[np.arange(n), cat] += 1.0
    x[:, 16] = rng.exponential(1.0, n)          # dwell time
    x[:, 17] = rng.lognormal(3.0, 0.7, n) / 50  # price
    return x


rng = np.random.default_rng(21)
store = LSMStore()
w_true = rng.normal(0, 0.3, DIM).astype(np.float32)
w = np.zeros(DIM, dtype=np.float32)
decay = np.float32(0.9)
t0 = time.perf_counter()
corr_buf = []

for tick in range(1, TICKS + 1):
    active = int(2_000 + (MAX_USERS - 2_000) * min(1.0, tick / (ONBOARD_FRAC * TICKS)))
    # writes: read-modify-write of each touched user's decayed profile
    # freshly onboarded users are the most active ones
    fresh = rng.random(WRITES_PER_TICK) < 0.3
    users = np.where(fresh, rng.integers(max(0, active - 3_000), active, WRITES_PER_TICK),
                     rng.integers(0, active, WRITES_PER_TICK))
    ev = user_event_features(rng, WRITES_PER_TICK)
    for u, e in zip(users.tolist(), ev):
        old = store.get(u)
        store.put(u, e if old is None else decay * old + (1 - decay) * e)

    # reads: score a batch of users with the online linear model (logistic SGD)
    q = rng.integers(0, active, READS_PER_TICK).tolist()
    feats = [store.get(u) for u in q]
    X = np.stack([f if f is not None else np.zeros(DIM, np.float32) for f in feats])
    p_true = 1 / (1 + np.exp(-(X @ w_true)))
    y = (rng.random(READS_PER_TICK) < p_true).astype(np.float32)
    p = 1 / (1 + np.exp(-(X @ w)))
    w -= 0.05 * X.T @ (p - y) / READS_PER_TICK
    corr_buf.append(float(np.corrcoef(p, p_true)[0, 1]) if p.std() > 0 else 0.0)

    if tick % 1000 == 0:
        log.info("tick %5d  active users %6d  runs %d  memtable %5d  store %.1f MB  "
                 "compactions %d  corr(p, p_true) %.3f  %.2f ms/tick",
                 tick, active, len(store.runs), len(store.memtable), store.store_bytes() / 2 ** 20,
                 store.stats["compactions"], np.nanmean(corr_buf[-1000:]),
                 1000 * (time.perf_counter() - t0) / tick)
        del corr_buf[:-1000]

log.info("done: %s", dict(store.stats))
