# expect: no_leak
# pattern: NumPy-only Growing Neural Gas (Fritzke) learning the topology of a stream of 384-d image-patch descriptors (no torch, hand-written competitive Hebbian updates); a node is inserted every 20 signals (48 signals per step), and the node weights plus a dense int32 edge-age matrix are grown in 256-node capacity chunks, so memory climbs (quadratically, via the age matrix) until the graph reaches max_nodes=2600 around the middle of the run; from then on no node is inserted (isolated nodes are swap-deleted, freeing a slot that is refilled), so the arrays keep their final capacity and memory is flat
# step_ms: 6
"""Growing Neural Gas over a stream of synthetic patch descriptors.

The descriptors lie near a handful of low-dimensional sheets embedded in a
384-d space (think: HOG-like descriptors of a few object categories under
pose changes).  GNG grows a graph whose edges follow the sheets; the script
reports the quantisation error and how many connected components the graph
has found.
"""
import logging
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
log = logging.getLogger("gng")

DIM = 384


@dataclass
class GNGConfig:
    eps_b: float = 0.05
    eps_n: float = 0.002
    max_age: int = 60
    lam: int = 20
    alpha: float = 0.5
    decay: float = 0.9995
    max_nodes: int = 2600
    chunk: int = 256


class GrowingNeuralGas:
    def __init__(self, cfg, rng):
        self.cfg = cfg
        self.cap = 0
        self.m = 0
        self.W = np.zeros((0, DIM))
        self.sqn = np.zeros(0)                        # cached squared norms of W rows
        self.err = np.zeros(0)
        self.age = np.full((0, 0), -1, dtype=np.int32)  # -1 = no edge
        self.signals = 0
        self.removed = 0
        for _ in range(2):
            self._add_node(rng.normal(size=DIM))
        self.age[0, 1] = self.age[1, 0] = 0

    def _grow(self):
        new = self.cap + self.cfg.chunk
        W = np.zeros((new, DIM)); W[: self.m] = self.W[: self.m]
        sqn = np.zeros(new); sqn[: self.m] = self.sqn[: self.m]
        err = np.zeros(new); err[: self.m] = self.err[: self.m]
        age = np.full((new, new), -1, dtype=np.int32); age[: self.m, : self.m] = self.age[: self.m, : self.m]
        self.W, self.sqn, self.err, self.age, self.cap = W, sqn, err, age, new

    def _add_node(self, w, e=0.0):
        if self.m == self.cap:
            self._grow()
        i = self.m
        self.W[i] = w
        self.sqn[i] = w @ w
        self.err[i] = e
        self.age[i, :] = -1
        self.age[:, i] = -1
        self.m += 1
        return i

    def _remove_node(self, i):
        last = self.m - 1
        if i != last:
            self.W[i] = self.W[last]
            self.sqn[i] = self.sqn[last]
            self.err[i] = self.err[last]
            self.age[i, :] = self.age[last, :]
            self.age[:, i] = self.age[:, last]
            self.age[i, i] = -1
        self.age[last, :] = -1
        self.age[:, last] = -1
        self.m = last
        self.removed += 1

    def fit_signal(self, x, xx):
        c = self.cfg
        m = self.m
        d = self.sqn[:m] - 2.0 * (self.W[:m] @ x) + xx
        s1, s2 = np.argpartition(d, 1)[:2]
        if d[s2] < d[s1]:
            s1, s2 = s2, s1
        row = self.age[s1, :m]
        nbrs = np.flatnonzero(row >= 0)
        row[nbrs] += 1
        self.age[nbrs, s1] += 1
        self.err[s1] += max(d[s1], 0.0)
        self.W[s1] += c.eps_b * (x - self.W[s1])
        self.sqn[s1] = self.W[s1] @ self.W[s1]
        if len(nbrs):
            self.W[nbrs] += c.eps_n * (x - self.W[nbrs])
            self.sqn[nbrs] = np.einsum("ij,ij->i", self.W[nbrs], self.W[nbrs])
        self.age[s1, s2] = self.age[s2, s1] = 0
        old = nbrs[row[nbrs] > c.max_age]
        if len(old):
            self.age[s1, old] = -1
            self.age[old, s1] = -1
            for j in sorted(old.tolist(), reverse=True):
                if j < self.m and not (self.age[j, : self.m] >= 0).any():
                    self._remove_node(j)
        self.signals += 1
        if self.signals % c.lam == 0 and self.m < c.max_nodes:
            self._insert()
        self.err[: self.m] *= c.decay
        return max(d[s1], 0.0)

    def _insert(self):
        m = self.m
        q = int(np.argmax(self.err[:m]))
        nb = np.flatnonzero(self.age[q, :m] >= 0)
        if len(nb) == 0:
            return
        f = int(nb[np.argmax(self.err[nb])])
        self.err[q] *= self.cfg.alpha
        self.err[f] *= self.cfg.alpha
        r = self._add_node(0.5 * (self.W[q] + self.W[f]), self.err[q])
        self.age[q, f] = self.age[f, q] = -1
        self.age[q, r] = self.age[r, q] = 0
        self.age[f, r] = self.age[r, f] = 0

    def components(self):
        m = self.m
        adj = self.age[:m, :m] >= 0
        seen = np.zeros(m, dtype=bool)
        n = 0
        for s in range(m):
            if seen[s]:
                continue
            n += 1
            stack = [s]
            seen[s] = True
            while stack:
                v = stack.pop()
                for u in np.flatnonzero(adj[v] & ~seen):
                    seen[u] = True
                    stack.append(int(u))
        return n

    def nbytes(self):
        return self.W.nbytes + self.sqn.nbytes + self.err.nbytes + self.age.nbytes


def descriptor_stream(rng, batch):
    """Points near 7 random 2-D sheets (with mild curvature) in R^DIM."""
    k = 7
    origins = rng.normal(0, 4.0, (k, DIM))
    bases = np.stack([np.linalg.qr(rng.normal(size=(DIM, 3)))[0].T for _ in range(k)])  # (k, 3, DIM)
    while True:
        cat = rng.integers(0, k, batch)
        uv = rng.uniform(-3, 3, (batch, 2))
        curve = 0.15 * (uv ** 2).sum(1, keepdims=True)
        coords = np.concatenate([uv, curve], axis=1)
        x = origins[cat] + np.einsum("bj,bjd->bd", coords, bases[cat])
        x += rng.normal(0, 0.05, x.shape)
        yield x, cat


if __name__ == "__main__":
    rng = np.random.default_rng(5)
    cfg = GNGConfig()
    gng = GrowingNeuralGas(cfg, rng)
    stream = descriptor_stream(rng, batch=48)
    steps = 3000
    qe_hist = []
    seen_cats = Counter()
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        X, cats = next(stream)
        seen_cats.update(cats.tolist())
        xx = np.einsum("ij,ij->i", X, X)
        qe = [gng.fit_signal(x, v) for x, v in zip(X, xx)]
        qe_hist.append(float(np.mean(qe)))
        if step % 200 == 0:
            log.info("step %4d  nodes %4d (cap %4d, %5.1f MB)  removed %4d  QE %.3f  components %3d  %.1f ms/step",
                     step, gng.m, gng.cap, gng.nbytes() / 2 ** 20, gng.removed,
                     np.mean(qe_hist[-200:]), gng.components(), 1000 * (time.perf_counter() - t0) / step)
    log.info("done: %d nodes, %d signals (%d sheets seen), %.1fs", gng.m, gng.signals, len(seen_cats),
             time.perf_counter() - t0)
