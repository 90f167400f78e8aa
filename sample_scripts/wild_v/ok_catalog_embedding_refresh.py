# expect: no_leak
# holder:
# pattern: nightly catalogue-embedding refresh worker (hashed-token EmbeddingBag + 1024-wide MLP encoder under torch.inference_mode, no optimizer, ~22 ms per batch of 1024 items with two encoder threads, code in main() + a RefreshJob class) that encodes batches on a 2-thread concurrent.futures.ThreadPoolExecutor; it looks suspicious because futures are kept in an in_flight dict, every worker thread owns a threading.local scratch buffer, tokenisation goes through functools.lru_cache, and a full (120k x 64 float32, ~31 MB) output matrix is held for the whole run; but the main loop keeps at most 4 futures in flight and pops each one as soon as wait(FIRST_COMPLETED) returns it, the thread-local scratch (token ids, offsets and every layer's activation buffer, used with addmm(out=...)) is allocated once per (fixed) worker thread and reused, the lru_cache is capped at 4096 titles, and the output matrix is allocated and zero-filled up front and overwritten in place on every refresh pass, so after warm-up memory is flat apart from a one-off step during the first two passes (the per-pass k-means centroids are computed in fixed-size chunks and replaced, not appended)
# step_ms: 22
"""Catalogue embedding refresh.

Re-encodes every catalogue item (title tokens + numeric attributes) with
the current encoder and writes the vectors into the serving matrix in
place.  After every full pass a coarse k-means quantiser is refitted on
a sample of the fresh vectors for the ANN index.  Encoding runs on a
small thread pool; the dispatcher keeps a fixed number of batches in
flight.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import functools
import logging
import threading
import time
import zlib
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
log = logging.getLogger("refresh")

N_ITEMS = 120_000
DIM = 64
N_ATTR = 24
HASH_BUCKETS = 1 << 16
MAX_TOKENS = 16
BATCH = 1024

VOCAB = [f"{a}{b}" for a in ("red", "blue", "steel", "oak", "mini", "pro", "eco", "max", "soft", "dry")
         for b in ("lamp", "chair", "case", "drill", "mug", "shoe", "cable", "tent", "rack", "pan",
                   "fan", "kit")]


@functools.lru_cache(maxsize=4096)
def tokenize(title: str) -> tuple[int, ...]:
    toks = title.lower().split()[:MAX_TOKENS]
    return tuple(zlib.crc32(t.encode()) % HASH_BUCKETS for t in toks)


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.EmbeddingBag(HASH_BUCKETS, 64, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(64 + N_ATTR, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                                 nn.Linear(1024, DIM))

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor, attrs: torch.Tensor) -> torch.Tensor:
        h = torch.cat([self.tok(ids, offsets), attrs], dim=1)
        return nn.functional.normalize(self.mlp(h), dim=1)


@dataclass
class Batch:
    start: int
    titles: list[str]
    attrs: np.ndarray


class Catalogue:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.attrs = self.rng.normal(0, 1, (N_ITEMS, N_ATTR)).astype(np.float32)
        self.title_ids = self.rng.integers(0, len(VOCAB), (N_ITEMS, 3))

    def batch(self, start: int) -> Batch:
        stop = min(start + BATCH, N_ITEMS)
        titles = [" ".join(VOCAB[j] for j in row) + f" v{i % 7}"
                  for i, row in zip(range(start, stop), self.title_ids[start:stop])]
        return Batch(start, titles, self.attrs[start:stop])


class RefreshJob:
    def __init__(self, encoder: Encoder, n_workers: int) -> None:
        self.encoder = encoder.eval()
        self.pool = cf.ThreadPoolExecutor(max_workers=n_workers, thread_name_prefix="enc")
        self._local = threading.local()
        self.vectors = np.zeros((N_ITEMS, DIM), dtype=np.float32)
        self.vectors.fill(0.0)

    def _scratch(self) -> dict[str, torch.Tensor]:
        s = getattr(self._local, "bufs", None)
        if s is None:
            s = self._local.bufs = {
                "ids": torch.zeros(BATCH * MAX_TOKENS, dtype=torch.long),
                "offsets": torch.zeros(BATCH, dtype=torch.long),
                "h0": torch.zeros(BATCH, 64 + N_ATTR),
                "h1": torch.zeros(BATCH, 1024),
                "h2": torch.zeros(BATCH, 1024),
                "out": torch.zeros(BATCH, DIM),
            }
        return s

    def encode(self, batch: Batch) -> tuple[int, np.ndarray]:
        """Forward pass written against the thread's preallocated buffers."""
        s = self._scratch()
        n = len(batch.titles)
        pos = 0
        for i, title in enumerate(batch.titles):
            toks = tokenize(title)
            s["offsets"][i] = pos
            s["ids"][pos:pos + len(toks)] = torch.tensor(toks)
            pos += len(toks)
        enc = self.encoder
        l1, l2, l3 = enc.mlp[0], enc.mlp[2], enc.mlp[4]
        with torch.inference_mode():
            h0, h1, h2, out = s["h0"][:n], s["h1"][:n], s["h2"][:n], s["out"][:n]
            h0[:, :64] = enc.tok(s["ids"][:pos], s["offsets"][:n])
            h0[:, 64:] = torch.from_numpy(batch.attrs)
            torch.addmm(l1.bias, h0, l1.weight.t(), out=h1).relu_()
            torch.addmm(l2.bias, h1, l2.weight.t(), out=h2).relu_()
            torch.addmm(l3.bias, h2, l3.weight.t(), out=out)
            out.div_(out.norm(dim=1, keepdim=True).clamp_min_(1e-12))
        return batch.start, out.numpy().copy()

    def refit_quantiser(self, rng: np.random.Generator, k: int = 256, iters: int = 6,
                        chunk: int = 4096) -> np.ndarray:
        sample = self.vectors[rng.choice(N_ITEMS, 20480, replace=False)]
        cent = sample[rng.choice(len(sample), k, replace=False)].copy()
        assign = np.empty(len(sample), dtype=np.int64)
        sims = np.empty((chunk, k), dtype=np.float32)
        for _ in range(iters):
            for a in range(0, len(sample), chunk):
                np.matmul(sample[a:a + chunk], cent.T, out=sims)
                np.argmax(sims, axis=1, out=assign[a:a + chunk])
            sums = np.zeros((k, DIM), dtype=np.float64)
            np.add.at(sums, assign, sample)
            counts = np.bincount(assign, minlength=k)
            live = counts > 0
            cent[live] = (sums[live] / counts[live, None]).astype(np.float32)
            cent /= np.linalg.norm(cent, axis=1, keepdims=True) + 1e-9
        return cent


def main() -> None:
    ap = argparse.ArgumentParser(description="catalogue embedding refresh")
    ap.add_argument("--passes", type=int, default=7)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-in-flight", type=int, default=4)
    ap.add_argument("--seed", type=int, default=9)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    cat = Catalogue(args.seed)
    job = RefreshJob(Encoder(), args.workers)
    centroids = None
    n_batches = (N_ITEMS + BATCH - 1) // BATCH
    t0 = last = time.perf_counter()
    done_total = 0
    for p in range(1, args.passes + 1):
        with torch.no_grad():   # the "new model version" for this pass
            for w in job.encoder.parameters():
                w.add_(0.01 * torch.randn_like(w))
        in_flight: dict[cf.Future, int] = {}
        next_start = 0
        while next_start < N_ITEMS or in_flight:
            while next_start < N_ITEMS and len(in_flight) < args.max_in_flight:
                fut = job.pool.submit(job.encode, cat.batch(next_start))
                in_flight[fut] = next_start
                next_start += BATCH
            done, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                del in_flight[fut]
                start, vecs = fut.result()
                job.vectors[start:start + len(vecs)] = vecs
                done_total += 1
            now = time.perf_counter()
            if now - last > 3.0:
                log.info("pass %d: %d/%d batches (%.1f ms/batch, tokenize cache %s)", p,
                         min(next_start // BATCH, n_batches), n_batches, 1000 * (now - t0) / done_total,
                         tokenize.cache_info().currsize)
                last = now
        centroids = job.refit_quantiser(rng)
        spread = float(np.mean(np.max(job.vectors[:4096] @ centroids.T, axis=1)))
        log.info("pass %d/%d finished: mean max-cosine to quantiser %.3f", p, args.passes, spread)
    job.pool.shutdown(wait=True)


if __name__ == "__main__":
    main()
