# expect: no_leak
# pattern: numpy online DP-means clustering of a drifting embedding stream: a new cluster (centroid + preallocated 256x128 float32 member reservoir) is opened whenever a point is farther than lambda from every centroid; new device types keep appearing for the first ~40% of the stream, so the cluster list and its reservoirs grow steadily, and outlier points open singleton clusters that compact() drops every 20 batches; once every type has appeared, the model stops growing
# step_ms: 50
"""Online DP-means clustering of device-fingerprint embeddings.

Each batch of fingerprints is assigned to the nearest cluster, or opens a
new cluster when no centroid is within lambda. Every cluster keeps a small
reservoir of member vectors for later inspection. Clusters that stay tiny
(outliers, glitches) are removed periodically.
"""
import time

import numpy as np

DIM = 128
N_TYPES = 480
BATCH = 4000
N_BATCHES = 380
SPREAD = 0.3
LAMBDA = 1.8 * SPREAD * np.sqrt(DIM)
RESERVOIR = 256
COMPACT_EVERY = 20
MIN_MEMBERS = 5
OUTLIER_RATE = 0.0015


class FingerprintStream:
    """Device types are rolled out gradually: all of them are live after 40% of the stream."""

    def __init__(self, rng):
        self.rng = rng
        self.centers = rng.standard_normal((N_TYPES, DIM)).astype(np.float32)
        self.popularity = rng.dirichlet(np.ones(N_TYPES) * 2.0)

    def batch(self, i):
        live = max(8, min(N_TYPES, int(N_TYPES * i / (0.4 * N_BATCHES))))
        p = self.popularity[:live] / self.popularity[:live].sum()
        types = self.rng.choice(live, size=BATCH, p=p)
        x = self.centers[types] + SPREAD * self.rng.standard_normal((BATCH, DIM)).astype(np.float32)
        outliers = self.rng.random(BATCH) < OUTLIER_RATE
        x[outliers] = 4.0 * self.rng.standard_normal((int(outliers.sum()), DIM))
        return x


class OnlineDPMeans:
    def __init__(self, lam, rng):
        self.lam2 = lam ** 2
        self.rng = rng
        self.centroids = np.empty((0, DIM), np.float32)
        self.counts = np.empty(0, np.int64)
        self.reservoirs = []
        self.born = []
        self.batches_seen = 0

    def _open_cluster(self, x):
        self.centroids = np.vstack([self.centroids, x[None]])
        self.counts = np.append(self.counts, 0)
        self.reservoirs.append(np.zeros((RESERVOIR, DIM), np.float32))
        self.born.append(self.batches_seen)
        return len(self.counts) - 1

    def _sq_dist(self, x):
        if len(self.counts) == 0:
            return np.full((len(x), 1), np.inf, np.float32)
        c2 = (self.centroids ** 2).sum(1)
        return (x ** 2).sum(1)[:, None] - 2 * x @ self.centroids.T + c2[None]

    def partial_fit(self, x):
        d2 = self._sq_dist(x)
        assign = d2.argmin(1)
        far = d2[np.arange(len(x)), assign] > self.lam2
        for i in np.flatnonzero(far):
            # re-check against clusters opened earlier in this batch
            d = ((self.centroids - x[i]) ** 2).sum(1) if len(self.counts) else np.array([np.inf])
            j = int(d.argmin())
            assign[i] = j if d[j] <= self.lam2 else self._open_cluster(x[i])
        for j in np.unique(assign):
            members = x[assign == j]
            n_old = self.counts[j]
            n_new = n_old + len(members)
            self.centroids[j] += (members.sum(0) - len(members) * self.centroids[j]) / n_new
            # reservoir sampling (Algorithm R) per cluster
            res = self.reservoirs[j]
            for k, m in enumerate(members):
                seen = n_old + k
                if seen < RESERVOIR:
                    res[seen] = m
                else:
                    r = self.rng.integers(0, seen + 1)
                    if r < RESERVOIR:
                        res[r] = m
            self.counts[j] = n_new
        self.batches_seen += 1
        return assign

    def compact(self):
        age = self.batches_seen - np.asarray(self.born)
        keep = ~((self.counts < MIN_MEMBERS) & (age >= COMPACT_EVERY // 2))
        removed = int((~keep).sum())
        self.centroids = np.ascontiguousarray(self.centroids[keep])
        self.counts = self.counts[keep]
        self.reservoirs = [r for r, k in zip(self.reservoirs, keep) if k]
        self.born = [b for b, k in zip(self.born, keep) if k]
        return removed


def main():
    rng = np.random.default_rng(42)
    stream = FingerprintStream(rng)
    model = OnlineDPMeans(LAMBDA, rng)
    t0 = time.time()
    removed_total = 0
    for i in range(N_BATCHES):
        x = stream.batch(i)
        model.partial_fit(x)
        if i % COMPACT_EVERY == COMPACT_EVERY - 1:
            removed_total += model.compact()
        if i % 40 == 39:
            big = int((model.counts >= MIN_MEMBERS).sum())
            print(f"batch {i + 1}/{N_BATCHES} clusters={len(model.counts)} (established {big}) "
                  f"pruned={removed_total} t={time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
