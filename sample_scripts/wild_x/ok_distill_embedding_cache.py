# expect: no_leak
# holder:
# pattern: online distillation of a large product-title embedding teacher (hashed n-gram bag -> 3-layer MLP, 384-d output) into a small student on live catalogue traffic (torch.optim.AdamW, ~21 ms per step of 192 titles, code in main() + EmbeddingDistiller/FifoCache classes); looks suspicious because teacher embeddings are memoised per title id in a dict reached as distiller.teacher_cache._store with a collections.deque of keys, but the deque is unbounded and put() pops from the front of it while len(self._store) > capacity, so the cache fills to 6000 entries (~10 MB) in the first ~20% of the run and then evicts one entry per insert; flat afterwards
# step_ms: 21
"""Online distillation of the catalogue title encoder.

The teacher encoder is too expensive for the indexing tier, so a small student
is fitted continuously on the titles flowing through the catalogue service.
Popular titles come back again and again, so the teacher's embeddings are kept
in a FIFO cache of fixed capacity.
"""
import argparse
import time
from collections import deque

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

N_HASH = 2 ** 15
EMB = 384
BAG = 24


class FifoCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self._store = {}
        self._order = deque()
        self.hits = 0
        self.misses = 0

    def get(self, key):
        v = self._store.get(key)
        if v is None:
            self.misses += 1
        else:
            self.hits += 1
        return v

    def put(self, key, value):
        if key in self._store:
            return
        self._store[key] = value
        self._order.append(key)
        while len(self._store) > self.capacity:
            self._store.pop(self._order.popleft(), None)


class Encoder(nn.Module):
    def __init__(self, bag_dim, widths):
        super().__init__()
        self.bag = nn.EmbeddingBag(N_HASH, bag_dim, mode="mean")
        layers, d = [], bag_dim
        for w in widths[:-1]:
            layers += [nn.Linear(d, w), nn.GELU()]
            d = w
        layers.append(nn.Linear(d, widths[-1]))
        self.mlp = nn.Sequential(*layers)

    def forward(self, tokens):
        return self.mlp(self.bag(tokens))


class EmbeddingDistiller:
    def __init__(self, capacity, lr=1e-3):
        self.teacher = Encoder(256, [1024, 1024, EMB]).eval()
        self.student = Encoder(64, [512, EMB])
        self.teacher_cache = FifoCache(capacity)
        self.opt = torch.optim.AdamW(self.student.parameters(), lr=lr, weight_decay=1e-4)

    def targets(self, keys, tokens):
        vals = [self.teacher_cache.get(k) for k in keys]
        miss = [i for i, v in enumerate(vals) if v is None]
        if miss:
            with torch.no_grad():
                emb = F.normalize(self.teacher(tokens[miss]), dim=1).numpy()
            for j, i in enumerate(miss):
                vals[i] = emb[j].copy()
                self.teacher_cache.put(keys[i], vals[i])
        return torch.from_numpy(np.stack(vals))

    def step(self, keys, tokens):
        target = self.targets(keys, tokens)
        pred = F.normalize(self.student(tokens), dim=1)
        loss = (1.0 - (pred * target).sum(1)).mean() + 0.5 * F.mse_loss(pred, target)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss.item()


def title_tokens(ids):
    """Deterministic hashed n-gram bag per title id."""
    out = np.empty((len(ids), BAG), dtype=np.int64)
    for r, tid in enumerate(ids):
        g = np.random.default_rng(int(tid))
        out[r] = g.integers(0, N_HASH, size=BAG)
    return torch.from_numpy(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=850)
    ap.add_argument("--batch", type=int, default=192)
    ap.add_argument("--cache-capacity", type=int, default=6000)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(2)

    distiller = EmbeddingDistiller(args.cache_capacity)
    run = 0.0
    t0 = time.time()
    for step in range(1, args.steps + 1):
        ids = rng.zipf(1.2, size=args.batch)
        keys = [f"t{int(i)}" for i in ids]
        run += distiller.step(keys, title_tokens(ids))
        if step % 50 == 0:
            c = distiller.teacher_cache
            print(f"step {step:4d}  loss {run / 50:.4f}  cache {len(c._store)}  "
                  f"hit {c.hits / max(1, c.hits + c.misses):.2f}  {time.time() - t0:.1f}s", flush=True)
            run = 0.0


if __name__ == "__main__":
    main()
