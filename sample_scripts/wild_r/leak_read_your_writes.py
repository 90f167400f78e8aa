# expect: leak
# holder: service._inflight|self._inflight|service._published|IndexService._inflight
# pattern: asyncio replay load test of a semantic-search ingest service (small transformer encoder under torch.inference_mode, no optimizer): each request task encodes its document, stages the embedding for the next index segment and then waits for read-your-writes visibility with `async with self._published: await self._published.wait_for(lambda: self.version >= v)`; the publisher merges the staged segment every tick but wakes waiters with self._published.notify() (wakes ONE waiter) instead of notify_all(), so with ~1.6 requests per tick only one waiter completes per publish and the rest stay parked in the Condition, each task frame (kept in the self._inflight set) holding its token ids and per-token hidden states (96x64 float32, ~25 KB) -> the backlog grows by ~0.6 requests per tick for the whole run
# step_ms: 3
"""Replay load test for the semantic-search ingest service.

Requests are replayed from a synthetic trace into one event loop.  Each
document is embedded by a small transformer encoder (micro-batched per
tick), staged into the next index segment, and the request returns once the
segment that contains it has been published (read-your-writes), together with
the highlighted passage computed from the token states.
"""
import asyncio
import logging
import math
import statistics
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s",
                    datefmt="%H:%M:%S")
log = logging.getLogger("ingest")

VOCAB = 4000
SEQ = 96
D_MODEL = 64
INDEX_CAP = 60000
WARM_ROWS = 42000  # rows restored from the last snapshot
TICKS = 4200
RATE = 1.6  # mean requests per tick

torch.manual_seed(0)
torch.set_num_threads(1)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Parameter(torch.randn(SEQ, D_MODEL) * 0.02)
        layer = nn.TransformerEncoderLayer(D_MODEL, nhead=4, dim_feedforward=256,
                                           batch_first=True, dropout=0.0)
        self.enc = nn.TransformerEncoder(layer, num_layers=3, enable_nested_tensor=False)
        self.out = nn.Linear(D_MODEL, 128)

    def forward(self, ids):
        h = self.enc(self.tok(ids) + self.pos)
        emb = nn.functional.normalize(self.out(h.mean(dim=1)), dim=-1)
        return h, emb


@dataclass
class Request:
    rid: int
    ids: torch.Tensor
    t_submit: float
    result: asyncio.Future = None


@dataclass
class Stats:
    served: int = 0
    latencies: list = field(default_factory=list)


class IndexService:
    def __init__(self, encoder):
        self.encoder = encoder.eval()
        self.index = np.zeros((INDEX_CAP, 128), dtype=np.float32)
        snap = np.random.default_rng(5).standard_normal((WARM_ROWS, 128)).astype(np.float32)
        self.index[:WARM_ROWS] = snap / np.linalg.norm(snap, axis=1, keepdims=True)
        self.index_rows = WARM_ROWS
        self.top1 = []
        self.version = 0
        self._staged = []
        self._encode_queue = []
        self._published = asyncio.Condition()
        self._inflight = set()
        self.stats = Stats()

    # -- request path ---------------------------------------------------
    def submit(self, req):
        task = asyncio.create_task(self.handle(req), name=f"req-{req.rid}")
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        return task

    async def handle(self, req):
        loop = asyncio.get_running_loop()
        req.result = loop.create_future()
        self._encode_queue.append(req)
        hidden, emb = await req.result
        self._staged.append(emb)
        v = self.version + 1  # visible once the next segment is published
        async with self._published:
            await self._published.wait_for(lambda: self.version >= v)
        # highlight: the 8-token window whose states align best with the doc embedding
        score = hidden @ hidden.mean(dim=0)
        win = score.unfold(0, 8, 1).mean(dim=1)
        start = int(win.argmax())
        self.stats.served += 1
        self.stats.latencies.append(time.perf_counter() - req.t_submit)
        return req.rid, start

    # -- background work, driven once per tick ---------------------------
    def encode_pending(self):
        if not self._encode_queue:
            return
        batch, self._encode_queue = self._encode_queue, []
        ids = torch.stack([r.ids for r in batch])
        with torch.inference_mode():
            h, emb = self.encoder(ids)
        for i, r in enumerate(batch):
            r.result.set_result((h[i].clone(), emb[i].numpy().copy()))

    async def publish(self):
        if self._staged:
            seg = np.stack(self._staged)
            self._staged = []
            n = len(seg)
            # near-duplicate check of the new segment against the live index
            live = self.index[: min(self.index_rows, INDEX_CAP)]
            sims = live @ seg.T
            top = np.partition(sims, -5, axis=0)[-5:]
            self.top1.extend(top.max(axis=0).tolist())
            del self.top1[:-500]
            start = self.index_rows % INDEX_CAP
            end = min(start + n, INDEX_CAP)
            self.index[start:end] = seg[: end - start]
            if end - start < n:
                self.index[: n - (end - start)] = seg[end - start:]
            self.index_rows += n
        self.version += 1
        async with self._published:
            self._published.notify()


def trace(rng):
    """Synthetic request trace: Zipf-ish token ids with topic structure."""
    rid = 0
    while True:
        n = rng.poisson(RATE)
        batch = []
        for _ in range(n):
            topic = rng.integers(0, 40)
            base = topic * 97 % VOCAB
            toks = (base + rng.zipf(1.6, size=SEQ)) % VOCAB
            batch.append(Request(rid, torch.from_numpy(toks.astype(np.int64)), time.perf_counter()))
            rid += 1
        yield batch


async def replay():
    rng = np.random.default_rng(11)
    service = IndexService(Encoder())
    source = trace(rng)
    t0 = time.perf_counter()
    submitted = 0
    for tick in range(1, TICKS + 1):
        for req in next(source):
            req.t_submit = time.perf_counter()
            service.submit(req)
            submitted += 1
        await asyncio.sleep(0)          # handlers enqueue for encoding
        service.encode_pending()
        await asyncio.sleep(0)          # handlers stage embeddings and wait
        await asyncio.sleep(0)
        await service.publish()
        await asyncio.sleep(0)
        if tick % 600 == 0:
            lat = service.stats.latencies[-600:] or [math.nan]
            log.info("tick %4d  submitted %5d  index rows %6d  v%d  top-1 sim %.3f  "
                     "p50 latency %.1f ms  %.1f ms/tick", tick, submitted, service.index_rows,
                     service.version, float(np.mean(service.top1)), 1000 * statistics.median(lat),
                     1000 * (time.perf_counter() - t0) / tick)
    log.info("replay finished: %d submitted, %d served in %.1fs", submitted,
             service.stats.served, time.perf_counter() - t0)
    # shut down: cancel whatever is still running so the loop can close
    for task in list(service._inflight):
        task.cancel()
    await asyncio.gather(*service._inflight, return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(replay())
