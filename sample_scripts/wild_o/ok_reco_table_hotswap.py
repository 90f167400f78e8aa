# expect: no_leak
# pattern: NumPy-only recommendation server hot-swaps its item-embedding table (~13 MB) every 120 ticks; sessions pin the table version they started with, so retired versions wait in self._retired until their last pinned session ends (sessions last 80-450 ticks) and are then dropped; memory climbs while the first versions pile up and then saw-tooths around ~5 live versions for the rest of the run
# step_ms: 5
"""Session-consistent candidate scoring with hot-swapped item embeddings.

An offline job publishes a refreshed item-embedding table every couple of
minutes.  A user session must see one consistent table from start to end
(otherwise rankings jump between page loads), so each session pins the
version that was current when it started; a version is released when no
session pins it any more.  Each tick the server scores the items for the
sessions that made a request and returns their top-k.
"""
import argparse
import itertools
import time
from collections import deque

import numpy as np


class TableServer:
    def __init__(self, n_items, dim, rng):
        self.rng = rng
        self.version = 0
        self._tables = {0: (rng.standard_normal((n_items, dim)) / np.sqrt(dim)).astype(np.float32)}
        self._pins = {0: 0}
        self._retired = []
        self.released = 0

    @property
    def current(self):
        return self.version

    def publish(self):
        old = self._tables[self.version]
        drift = (0.05 * self.rng.standard_normal(old.shape)).astype(np.float32)
        new = old + drift
        new /= np.linalg.norm(new, axis=1, keepdims=True)
        self._retired.append(self.version)
        self.version += 1
        self._tables[self.version] = new
        self._pins[self.version] = 0
        self._collect()

    def pin(self):
        self._pins[self.version] += 1
        return self.version

    def unpin(self, v):
        self._pins[v] -= 1
        if v != self.version and self._pins[v] == 0:
            self._collect()

    def table(self, v):
        return self._tables[v]

    def _collect(self):
        still = []
        for v in self._retired:
            if self._pins[v] == 0:
                del self._tables[v], self._pins[v]
                self.released += 1
            else:
                still.append(v)
        self._retired = still

    def live_versions(self):
        return len(self._tables)


class Session:
    __slots__ = ("sid", "version", "user", "seen", "ends_at")

    def __init__(self, sid, version, user, ends_at):
        self.sid, self.version, self.user, self.ends_at = sid, version, user, ends_at
        self.seen = deque(maxlen=50)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ticks", type=int, default=4500)
    ap.add_argument("--items", type=int, default=50_000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--publish-every", type=int, default=120)
    ap.add_argument("--arrivals", type=float, default=1.5)
    ap.add_argument("--seed", type=int, default=12)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    server = TableServer(args.items, args.dim, rng)
    sessions = {}
    ids = itertools.count()
    served = 0
    t0 = time.time()
    for tick in range(1, args.ticks + 1):
        if tick % args.publish_every == 0:
            server.publish()

        for _ in range(rng.poisson(args.arrivals)):
            sid = next(ids)
            user = (rng.standard_normal(args.dim) / np.sqrt(args.dim)).astype(np.float32)
            sessions[sid] = Session(sid, server.pin(), user, tick + int(rng.integers(80, 450)))

        # a fraction of the open sessions make a request this tick; group them by version
        active = [s for s in sessions.values() if rng.random() < 0.04]
        by_version = {}
        for s in active:
            by_version.setdefault(s.version, []).append(s)
        for v, group in by_version.items():
            table = server.table(v)
            users = np.stack([s.user for s in group])
            scores = users @ table.T
            top = np.argpartition(-scores, 10, axis=1)[:, :10]
            for s, items in zip(group, top):
                s.seen.extend(items.tolist())
                s.user = 0.95 * s.user + 0.05 * table[items].mean(0)
            served += len(group)

        for sid in [sid for sid, s in sessions.items() if s.ends_at <= tick]:
            server.unpin(sessions.pop(sid).version)

        if tick % 750 == 0:
            print(f"tick {tick:5d}  open sessions {len(sessions):4d}  table v{server.current}  "
                  f"live versions {server.live_versions()}  released {server.released}  "
                  f"requests served {served}  ({time.time() - t0:.1f}s)", flush=True)

    print(f"done: {served} requests, {server.version} table versions published")


if __name__ == "__main__":
    main()
