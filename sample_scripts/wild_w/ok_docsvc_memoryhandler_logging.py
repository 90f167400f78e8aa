# expect: no_leak
# holder:
# pattern: document-routing inference service replayed offline (4-layer transformer encoder under torch.inference_mode, no optimizer, ~145 ms per batch of 12 documents x 256 tokens, code in main() + a Router class + module-level logging setup); it looks like a log-buffer pile-up: every document produces a DEBUG LogRecord whose extra= carries numpy copies of its CLS embedding, class probabilities and per-layer attention entropies, the records go to a logging.handlers.MemoryHandler on a module-level logger, and the router memoises answers by content hash and keeps latencies; but the MemoryHandler has a real target (a RotatingFileHandler in a temp dir with maxBytes/backupCount) and capacity=200, so shouldFlush() empties its buffer every 200 records (and on every WARNING), the answer cache is an OrderedDict LRU capped at 256 entries, latencies go into a deque(maxlen=500), so memory is flat after the first batches
# step_ms: 145
"""Offline replay of the document-routing service.

Documents (synthetic token sequences from a few topic distributions) are
routed to one of 8 queues by a small transformer encoder.  For debugging the
service logs one DEBUG record per document with the raw model outputs in
`extra` (embedding, class probabilities, per-layer attention entropy); the
records are buffered in a MemoryHandler and written to a rotating log file in
chunks, which keeps logging off the hot path.  Documents that are re-sent
(same content hash) are answered from a small in-process cache.

Usage:  python docsvc_memoryhandler_logging.py [--steps 130] [--batch 12]
"""
import argparse
import collections
import hashlib
import logging
import logging.handlers
import os
import shutil
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn

VOCAB, N_QUEUES = 8000, 8
LOG_DIR = tempfile.mkdtemp(prefix="docsvc_logs_")
log = logging.getLogger("docsvc.router")
log.setLevel(logging.DEBUG)
log.propagate = False
_file = logging.handlers.RotatingFileHandler(os.path.join(LOG_DIR, "router.log"),
                                             maxBytes=2 * 2**20, backupCount=2)
_file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
_buffer = logging.handlers.MemoryHandler(capacity=200, flushLevel=logging.WARNING, target=_file)
log.addHandler(_buffer)


class Encoder(nn.Module):
    def __init__(self, d=192, heads=4, layers=4, max_len=512):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(max_len, d)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True) for _ in range(layers))
        self.head = nn.Linear(d, N_QUEUES)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))[None]
        entropies = []
        for layer in self.layers:
            x = layer(x)
            p = torch.softmax(x[:, 0] @ x.transpose(1, 2) / x.shape[-1] ** 0.5, dim=-1)
            entropies.append(-(p * p.clamp_min(1e-9).log()).sum(-1))
        cls = x[:, 0]
        return self.head(cls), cls, torch.stack(entropies, 1)


class Router:
    def __init__(self, model, seq_len, cache_size=256):
        self.model = model
        self.seq_len = seq_len
        self.cache_size = cache_size
        self.answers = collections.OrderedDict()          # content hash -> (queue, prob), LRU
        self.hits = 0
        self.latencies = collections.deque(maxlen=500)
        self.routed = collections.Counter()

    def route(self, docs):
        t0 = time.perf_counter()
        keys = [hashlib.blake2b(d.numpy().tobytes(), digest_size=12).hexdigest() for d in docs]
        todo = [i for i, k in enumerate(keys) if k not in self.answers]
        self.hits += len(docs) - len(todo)
        if todo:
            ids = torch.stack([docs[i] for i in todo])
            with torch.inference_mode():
                logits, cls, ent = self.model(ids)
                probs = torch.softmax(logits, -1)
            for j, i in enumerate(todo):
                q = int(probs[j].argmax())
                p = float(probs[j, q])
                log.debug("doc %s -> queue %d (p=%.3f)", keys[i], q, p,
                          extra={"embedding": cls[j].numpy().copy(), "probs": probs[j].numpy().copy(),
                                 "attn_entropy": ent[j].numpy().copy()})
                if p < 0.2:
                    log.warning("low-confidence routing for %s: %s", keys[i], np.round(probs[j].numpy(), 3))
                self.answers[keys[i]] = (q, p)
                if len(self.answers) > self.cache_size:
                    self.answers.popitem(last=False)
        queues = []
        for k in keys:
            self.answers.move_to_end(k)
            q, _ = self.answers[k]
            self.routed[q] += 1
            queues.append(q)
        self.latencies.append(time.perf_counter() - t0)
        return queues


def make_stream(seed, seq_len, batch):
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(VOCAB, 0.05), size=N_QUEUES)
    recent = collections.deque(maxlen=64)
    while True:
        docs = []
        for _ in range(batch):
            if recent and rng.random() < 0.1:                 # client retries
                docs.append(recent[rng.integers(len(recent))])
                continue
            mix = rng.dirichlet(np.full(N_QUEUES, 0.3))
            p = mix @ topics
            doc = torch.from_numpy(rng.choice(VOCAB, size=seq_len, p=p / p.sum()).astype(np.int64))
            recent.append(doc)
            docs.append(doc)
        yield docs


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=130, help="request batches to replay")
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--seq-len", type=int, default=256)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Encoder().eval()
    router = Router(model, args.seq_len)
    stream = make_stream(0, args.seq_len, args.batch)
    t0 = time.time()
    try:
        for step in range(args.steps):
            router.route(next(stream))
            if step % 10 == 0:
                lat = np.array(router.latencies) * 1e3
                print(f"[{time.time() - t0:6.1f}s] batch {step:4d}  p50={np.median(lat):6.1f} ms  "
                      f"p95={np.percentile(lat, 95):6.1f} ms  cache hits={router.hits} size={len(router.answers)}  "
                      f"queues={dict(sorted(router.routed.items()))}", flush=True)
    finally:
        _buffer.close()
        _file.close()
        size = sum(os.path.getsize(os.path.join(LOG_DIR, f)) for f in os.listdir(LOG_DIR))
        print(f"replayed {args.steps} batches in {time.time() - t0:.1f}s; log files {size / 2**20:.1f} MB")
        shutil.rmtree(LOG_DIR, ignore_errors=True)


if __name__ == "__main__":
    main()
