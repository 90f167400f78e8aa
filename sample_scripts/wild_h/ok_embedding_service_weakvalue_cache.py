# expect: no_leak
# pattern: threaded embedding-lookup service (client thread -> bounded queue.Queue -> batching worker); embeddings are shared through a weakref.WeakValueDictionary keyed by doc id, but the only strong references are a fixed-size OrderedDict LRU (hot set) and a deque(maxlen) of recent responses, so dead entries vanish from the weak map and RSS levels off after the LRU warms up even though new doc ids keep arriving
# step_ms: 3
"""In-process document-embedding service.

Clients send document ids (Zipf-distributed popularity over a large
catalogue); a worker thread batches pending requests, encodes the
documents it does not already have with a small EmbeddingBag + MLP
encoder, and answers with the embedding.

Caching is two-level: a strong LRU of the hottest documents, and a weak
map that lets any embedding still referenced elsewhere (e.g. by a response
that has not been consumed yet, or the debug ring of recent responses) be
reused without being pinned in memory.
"""
import queue
import threading
import time
import weakref
from collections import OrderedDict, deque

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(0)

CATALOGUE = 2_000_000
VOCAB = 30_000
DIM = 768
HOT_SIZE = 1000
MAX_BATCH = 32
N_REQUESTS = 240_000


class DocEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(VOCAB, 64, mode="mean")
        self.proj = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, DIM))

    def forward(self, tokens, offsets):
        return nn.functional.normalize(self.proj(self.bag(tokens, offsets)), dim=-1)


def doc_tokens(doc_id):
    rng = np.random.default_rng(doc_id)
    n = int(rng.integers(20, 120))
    return rng.integers(0, VOCAB, n)


class EmbeddingService:
    def __init__(self):
        self.encoder = DocEncoder().eval()
        self._hot = OrderedDict()
        self._live = weakref.WeakValueDictionary()
        self.recent_responses = deque(maxlen=4096)  # for the /debug/recent endpoint
        self.stats = {"hot": 0, "live": 0, "miss": 0}

    def _remember(self, doc_id, emb):
        self._hot[doc_id] = emb
        self._hot.move_to_end(doc_id)
        if len(self._hot) > HOT_SIZE:
            self._hot.popitem(last=False)
        self._live[doc_id] = emb

    def lookup_batch(self, doc_ids):
        out, missing = {}, []
        for d in doc_ids:
            if d in self._hot:
                self._hot.move_to_end(d)
                out[d] = self._hot[d]
                self.stats["hot"] += 1
                continue
            e = self._live.get(d)
            if e is not None:
                out[d] = e
                self._remember(d, e)
                self.stats["live"] += 1
            else:
                missing.append(d)
        missing = list(dict.fromkeys(missing))
        if missing:
            toks = [doc_tokens(d) for d in missing]
            offsets = torch.tensor(np.cumsum([0] + [len(t) for t in toks[:-1]]))
            with torch.no_grad():
                embs = self.encoder(torch.from_numpy(np.concatenate(toks)), offsets)
            for d, e in zip(missing, embs):
                e = e.clone()
                out[d] = e
                self._remember(d, e)
            self.stats["miss"] += len(missing)
        return [out[d] for d in doc_ids]


def client(req_q, n, seed=1):
    rng = np.random.default_rng(seed)
    for i in range(n):
        doc = int(rng.zipf(1.15)) % CATALOGUE
        req_q.put((i, doc, time.perf_counter()))
    req_q.put(None)


def main():
    svc = EmbeddingService()
    req_q = queue.Queue(maxsize=256)
    th = threading.Thread(target=client, args=(req_q, N_REQUESTS), daemon=True)
    th.start()
    served, latencies = 0, deque(maxlen=2000)
    t0 = last = time.time()
    done = False
    while not done:
        batch = [req_q.get()]
        while len(batch) < MAX_BATCH:
            try:
                batch.append(req_q.get_nowait())
            except queue.Empty:
                break
        if batch[-1] is None:
            done = True
            batch.pop()
        if not batch:
            continue
        embs = svc.lookup_batch([b[1] for b in batch])
        now_pc = time.perf_counter()
        for (rid, doc, t_req), e in zip(batch, embs):
            svc.recent_responses.append({"id": rid, "doc": doc, "embedding": e})
            latencies.append(now_pc - t_req)
        served += len(batch)
        now = time.time()
        if now - last > 1.5:
            last = now
            s = svc.stats
            tot = max(1, sum(s.values()))
            print(f"served {served:6d}  hot {s['hot'] / tot:.2f} live {s['live'] / tot:.2f} miss {s['miss'] / tot:.2f}  "
                  f"weak entries {len(svc._live):5d}  p50 {1e3 * np.median(latencies):.1f} ms  ({now - t0:.1f}s)",
                  flush=True)
    th.join()
    print(f"done: {served} requests in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
