# expect: leak
# holder: spans
# pattern: thread-pool scoring service records per-request trace spans (attrs carry the request's feature and hidden numpy arrays) in a threading.local list; the exporter's flush() runs on the main thread, so it only ever clears the main thread's own list and the pool threads' lists grow forever
# step_ms: 8
"""Micro-batch scoring service for the fraud-signal model.

Requests arrive in micro-batches; each request is featurised and scored on a
small thread pool.  A lightweight tracer records timing spans for every stage
so they can be shipped to the metrics backend about once per second.
"""
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

N_BATCHES = 1800
BATCH = 16
N_WORKERS = 3
D_RAW = 1024
D_IN = 512
D_HID = 2048
N_CLASSES = 8
SEED = 7


class Tracer:
    """Tiny span recorder, one buffer per thread so recording needs no lock."""

    def __init__(self):
        self._local = threading.local()
        self._lock = threading.Lock()
        self.exported = 0
        self.exported_ms = 0.0

    def _buffer(self):
        spans = getattr(self._local, "spans", None)
        if spans is None:
            spans = []
            self._local.spans = spans
        return spans

    def span(self, name, t0, t1, **attrs):
        self._buffer().append(
            {
                "name": name,
                "t0": t0,
                "t1": t1,
                "thread": threading.get_ident(),
                "attrs": attrs,
            }
        )

    def flush(self):
        spans = self._buffer()
        n = len(spans)
        total_ms = sum((s["t1"] - s["t0"]) * 1e3 for s in spans)
        spans.clear()
        with self._lock:
            self.exported += n
            self.exported_ms += total_ms
        return n


class Scorer:
    def __init__(self, seed):
        rng = np.random.default_rng(seed)
        self.proj = (rng.standard_normal((D_IN, D_RAW)) / np.sqrt(D_RAW)).astype(np.float32)
        self.w1 = (rng.standard_normal((D_HID, D_IN)) / np.sqrt(D_IN)).astype(np.float32)
        self.b1 = np.zeros(D_HID, np.float32)
        self.w2 = (rng.standard_normal((N_CLASSES, D_HID)) / np.sqrt(D_HID)).astype(np.float32)

    def featurize(self, raw):
        x = np.log1p(raw)
        x = (x - x.mean()) / (x.std() + 1e-6)
        return self.proj @ x

    def score(self, feats):
        hidden = np.maximum(self.w1 @ feats + self.b1, 0.0)
        logits = self.w2 @ hidden
        logits -= logits.max()
        p = np.exp(logits)
        return hidden, p / p.sum()


class ScoringService:
    def __init__(self, scorer, tracer):
        self.scorer = scorer
        self.tracer = tracer
        self.pool = ThreadPoolExecutor(N_WORKERS, thread_name_prefix="score")

    def handle(self, req_id, raw):
        t0 = time.perf_counter()
        feats = self.scorer.featurize(raw)
        t1 = time.perf_counter()
        hidden, probs = self.scorer.score(feats)
        t2 = time.perf_counter()
        self.tracer.span("featurize", t0, t1, request=req_id, features=feats)
        self.tracer.span("score", t1, t2, request=req_id, hidden=hidden, top=int(probs.argmax()))
        return probs

    def score_batch(self, first_id, raw_batch):
        ids = range(first_id, first_id + len(raw_batch))
        return np.stack(list(self.pool.map(self.handle, ids, raw_batch)))

    def close(self):
        self.pool.shutdown(wait=True)


def main():
    rng = np.random.default_rng(SEED)
    tracer = Tracer()
    service = ScoringService(Scorer(SEED), tracer)

    flagged = 0
    class_counts = np.zeros(N_CLASSES, np.int64)
    latencies = []
    start = last_report = time.perf_counter()
    for b in range(N_BATCHES):
        t0 = time.perf_counter()
        raw = rng.gamma(2.0, 1.5, size=(BATCH, D_RAW)).astype(np.float32)
        probs = service.score_batch(b * BATCH, raw)
        flagged += int((probs[:, 0] > 0.5).sum())
        class_counts += np.bincount(probs.argmax(1), minlength=N_CLASSES)
        t1 = time.perf_counter()
        latencies.append((t1 - t0) * 1e3)
        tracer.span("batch", t0, t1, batch=b, size=BATCH)

        if t1 - last_report >= 1.0:
            shipped = tracer.flush()
            recent = latencies[-50:]
            print(
                f"[{t1 - start:5.1f}s] batch {b + 1}/{N_BATCHES} "
                f"requests={(b + 1) * BATCH} flagged={flagged} "
                f"p50={np.percentile(recent, 50):.1f}ms p95={np.percentile(recent, 95):.1f}ms "
                f"shipped={shipped} spans (total {tracer.exported})",
                flush=True,
            )
            last_report = t1
            latencies = latencies[-200:]

    tracer.flush()
    service.close()
    dist = class_counts / class_counts.sum()
    print(f"done: {N_BATCHES * BATCH} requests, flagged {flagged}, class mix {np.round(dist, 3)}")


if __name__ == "__main__":
    main()
