# expect: leak
# holder: audit_log
# pattern: inference-only serving loop appends every request's input tensor and output probabilities to a module-level audit log that is never flushed
# step_ms: 2
"""Toy model-serving loop.

Requests arrive from a generator (standing in for a message queue), get
batched, scored by a small classifier under ``torch.inference_mode()`` and
answered.  For compliance reasons every request is recorded in ``audit_log``
together with the raw feature tensor and the returned probabilities.

Why it leaks: ``audit_log`` is a plain list that lives for the whole life of
the process and nothing ever writes it out or truncates it, so every
request's inputs/outputs stay resident (~20 KiB per request).

Fix: write audit records to disk (or a bounded ``deque``) and keep only ids
and small scalars in memory, e.g. ``top_class`` and ``latency_ms``.
"""
import itertools
import random
import time
from dataclasses import dataclass, field

import torch
import torch.nn as nn

torch.set_num_threads(1)

N_FEATURES = 128
N_CLASSES = 20
N_REQUESTS = 8000


@dataclass
class Request:
    request_id: int
    features: torch.Tensor
    received_at: float = field(default_factory=time.time)


class Classifier(nn.Module):
    def __init__(self, d_in, d_hidden, n_out):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_in, d_hidden),
            nn.GELU(),
            nn.LayerNorm(d_hidden),
            nn.Linear(d_hidden, d_hidden),
            nn.GELU(),
            nn.Linear(d_hidden, n_out),
        )

    def forward(self, x):
        return self.net(x)


def incoming_requests(n, seed=0):
    """Pretend message queue: yields requests with a variable number of rows."""
    rng = random.Random(seed)
    ids = itertools.count(1)
    for _ in range(n):
        rows = rng.randint(16, 48)
        x = torch.randn(rows, N_FEATURES)
        # a couple of "client" specific shifts so the inputs aren't all N(0, 1)
        x[:, : rng.randint(1, 8)] += rng.uniform(-2, 2)
        yield Request(next(ids), x)


audit_log = []


def handle(model, req, stats):
    t0 = time.perf_counter()
    logits = model(req.features)
    probs = torch.softmax(logits, dim=-1)
    conf, top = probs.max(dim=-1)
    latency_ms = (time.perf_counter() - t0) * 1e3

    audit_log.append(
        {
            "request_id": req.request_id,
            "received_at": req.received_at,
            "inputs": req.features,
            "probs": probs,
            "latency_ms": latency_ms,
        }
    )
    stats["rows"] += req.features.shape[0]
    stats["low_conf"] += int((conf < 0.2).sum())
    return top.tolist()


def main():
    model = Classifier(N_FEATURES, 768, N_CLASSES).eval()
    stats = {"rows": 0, "low_conf": 0}
    t_start = time.time()
    with torch.inference_mode():
        for i, req in enumerate(incoming_requests(N_REQUESTS)):
            handle(model, req, stats)
            if (i + 1) % 1000 == 0:
                lat = sorted(r["latency_ms"] for r in audit_log[-1000:])
                print(
                    f"served {i + 1:5d} requests  rows={stats['rows']}  "
                    f"p50={lat[500]:.2f}ms p99={lat[990]:.2f}ms  "
                    f"audit records={len(audit_log)}"
                )
    print(f"done in {time.time() - t_start:.1f}s, low-confidence rows: {stats['low_conf']}")


if __name__ == "__main__":
    main()
