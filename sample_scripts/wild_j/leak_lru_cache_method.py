# expect: leak
# holder: item_vector
# pattern: @functools.lru_cache(maxsize=None) on a method of ShardCatalog; a new catalog is built for every daily shard, and the class-level cache's (self, item_id) keys keep every old catalog (with its item tables) and its cached tensors alive
# step_ms: 10
"""Session-based next-item recommender, trained day by day.

Every daily shard ships its own catalogue snapshot (content embeddings from the
upstream model plus popularity counts).  A ShardCatalog wraps one snapshot and
serves normalised item vectors to a GRU session encoder trained with in-batch
negatives.
"""
import functools
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(3)

N_DAYS = 50
STEPS_PER_DAY = 30
BATCH = 32
SESSION_LEN = 8
N_ITEMS = 6000
CONTENT_DIM = 64
SEED = 3


class ShardCatalog:
    def __init__(self, day, rng):
        self.day = day
        walk = np.cumsum(rng.standard_normal((N_ITEMS, CONTENT_DIM)), axis=0)
        self.content = (walk - walk.mean(axis=0)).astype(np.float32)
        self.popularity = rng.pareto(1.2, N_ITEMS).astype(np.float32) + 1.0
        self.pop_rank = np.argsort(-self.popularity)
        self.sampling_p = self.popularity / self.popularity.sum()

    @functools.lru_cache(maxsize=None)
    def item_vector(self, item_id):
        v = self.content[item_id]
        v = v / (np.linalg.norm(v) + 1e-6)
        feat = np.empty(CONTENT_DIM + 1, np.float32)
        feat[:CONTENT_DIM] = v
        feat[CONTENT_DIM] = np.log(self.popularity[item_id])
        return torch.from_numpy(feat)

    def sample_sessions(self, rng, batch, length):
        first = rng.choice(N_ITEMS, size=batch, p=self.sampling_p)
        jumps = rng.integers(-40, 41, size=(batch, length))
        return (first[:, None] + np.cumsum(jumps, axis=1)) % N_ITEMS

    def batch_tensor(self, ids):
        return torch.stack([torch.stack([self.item_vector(int(i)) for i in row]) for row in ids])


class SessionEncoder(nn.Module):
    def __init__(self, d_in, hidden=96):
        super().__init__()
        self.gru = nn.GRU(d_in, hidden, batch_first=True)
        self.head = nn.Linear(hidden, d_in)
        self.item_proj = nn.Linear(d_in, d_in)

    def forward(self, seq):
        _, h = self.gru(seq)
        return self.head(h[-1])

    def embed_items(self, items):
        return self.item_proj(items)


def main():
    rng = np.random.default_rng(SEED)
    model = SessionEncoder(CONTENT_DIM + 1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    start = last = time.perf_counter()
    recent = []
    step = 0
    for day in range(N_DAYS):
        catalog = ShardCatalog(day, rng)
        day_loss = 0.0
        for _ in range(STEPS_PER_DAY):
            ids = catalog.sample_sessions(rng, BATCH, SESSION_LEN + 1)
            seq = catalog.batch_tensor(ids[:, :-1])
            target = torch.stack([catalog.item_vector(int(i)) for i in ids[:, -1]])

            query = F.normalize(model(seq), dim=1)
            keys = F.normalize(model.embed_items(target), dim=1)
            logits = query @ keys.t() / 0.1
            loss = F.cross_entropy(logits, torch.arange(BATCH))

            opt.zero_grad()
            loss.backward()
            opt.step()

            day_loss += loss.item()
            recent.append(loss.item())
            recent = recent[-100:]
            step += 1
            now = time.perf_counter()
            if now - last >= 1.0:
                print(
                    f"[{now - start:5.1f}s] day {day + 1}/{N_DAYS} step {step} "
                    f"loss={np.mean(recent):.4f}",
                    flush=True,
                )
                last = now
        if (day + 1) % 10 == 0:
            print(f"  day {day + 1}: mean loss {day_loss / STEPS_PER_DAY:.4f}", flush=True)

    print(f"done: {step} steps in {time.perf_counter() - start:.1f}s, final loss {np.mean(recent):.4f}")


if __name__ == "__main__":
    main()
