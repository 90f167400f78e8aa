# expect: no_leak
# holder: none
# pattern: recommendation serving loop caches per-user embedding tensors with functools.lru_cache(maxsize=1024); the cache fills early and then evicts, so memory stays flat
# step_ms: 2
"""Two-tower recommender serving loop with a bounded per-user cache.

Item embeddings for the whole catalogue are precomputed once at start-up.
Each request names a user (Zipf-distributed, so some users are very hot),
fetches that user's features from a simulated feature store, runs the user
tower, scores a random candidate set of items, re-ranks the best few hundred with a
small MLP and returns the top-k.

The user-tower output is memoized with ``functools.lru_cache(maxsize=1024)``.
That looks like "caching tensors forever", but the cache is bounded: once
1024 users are cached each new user evicts the least recently used one.
Recent latencies go into a ``deque(maxlen=...)``.  Nothing grows after the
first few thousand requests.
"""
import functools
import time
from collections import deque

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)

N_USERS = 300_000
N_ITEMS = 60_000
DIM = 96
USER_FEATS = 48
N_CANDIDATES = 4000
N_RERANK = 200
TOP_K = 20
N_REQUESTS = 8500


class Tower(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, 256), nn.ReLU(), nn.Linear(256, d_out))

    def forward(self, x):
        z = self.net(x)
        return z / z.norm(dim=-1, keepdim=True)


def fetch_user_features(user_id):
    """Stand-in for a feature-store lookup: deterministic per user."""
    rng = np.random.default_rng(user_id)
    f = rng.standard_normal(USER_FEATS).astype(np.float32)
    f[:4] = np.log1p(user_id % 97), (user_id % 7) / 7, (user_id % 24) / 24, 1.0
    return torch.from_numpy(f)


user_tower = Tower(USER_FEATS, DIM).eval()


@functools.lru_cache(maxsize=1024)
def user_embedding(user_id):
    with torch.no_grad():
        return user_tower(fetch_user_features(user_id).unsqueeze(0))[0]


class Ranker(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(3 * d, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, u, it):
        u = u.expand_as(it)
        return self.mlp(torch.cat([u, it, u * it], dim=-1)).squeeze(-1)


def build_item_index(seed=0):
    g = torch.Generator().manual_seed(seed)
    item_tower = Tower(64, DIM).eval()
    chunks = []
    with torch.no_grad():
        for start in range(0, N_ITEMS, 10_000):
            chunks.append(item_tower(torch.randn(10_000, 64, generator=g)))
    return torch.cat(chunks)


def main():
    items = build_item_index()
    ranker = Ranker(DIM).eval()
    print(f"item index: {items.shape[0]} x {items.shape[1]} ({items.numel() * 4 / 2**20:.0f} MB)")
    rng = np.random.default_rng(1)
    latencies = deque(maxlen=2000)
    t0 = time.time()
    with torch.no_grad():
        for i in range(N_REQUESTS):
            ts = time.perf_counter()
            user_id = int(rng.zipf(1.1)) % N_USERS
            cand = torch.from_numpy(rng.integers(0, N_ITEMS, size=N_CANDIDATES))
            u = user_embedding(user_id)
            scores = items[cand] @ u
            short = cand[scores.topk(N_RERANK).indices]
            rerank = ranker(u.unsqueeze(0), items[short])
            top = short[rerank.topk(TOP_K).indices].tolist()
            latencies.append((time.perf_counter() - ts) * 1e3)
            if (i + 1) % 2000 == 0:
                info = user_embedding.cache_info()
                lat = np.percentile(latencies, [50, 99])
                print(f"[{time.time() - t0:5.1f}s] {i + 1:5d} requests  p50={lat[0]:.2f}ms p99={lat[1]:.2f}ms  "
                      f"cache size={info.currsize} hit rate={info.hits / (info.hits + info.misses):.2f}  top1={top[0]}")


if __name__ == "__main__":
    main()
