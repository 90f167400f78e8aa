# expect: leak
# holder: current_trace|_current_trace|trace|spans
# pattern: torch inference service (no optimizer, inference_mode) runs each request in contextvars.copy_context().run() and appends trace spans (with numpy copies of the request features and output probabilities) to current_trace.get(); the ContextVar was declared with default=[], and no request ever sets it, so every "per-request" trace is the one shared default list, which grows forever
# step_ms: 4
"""Toy intent-classification service with per-request tracing.

Each request is handled in its own copy of the current context, so the
tracing helpers can stash spans without passing a tracer object around.
At the end of a request the spans are summarised into a latency line.
"""
import contextvars
import time
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)

VOCAB = 20_000
N_INTENTS = 2000
SEQ_LEN = 48
RUN_SECONDS = 18.0

current_trace = contextvars.ContextVar("current_trace", default=[])
request_id = contextvars.ContextVar("request_id", default=None)


@contextmanager
def span(name, **attrs):
    t = time.perf_counter()
    record = {"name": name, "request": request_id.get(), **attrs}
    try:
        yield record
    finally:
        record["ms"] = (time.perf_counter() - t) * 1e3
        current_trace.get().append(record)


class IntentModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, 128, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, N_INTENTS))

    def forward(self, tokens, offsets):
        return self.mlp(self.emb(tokens, offsets))


class IntentService:
    def __init__(self):
        self.model = IntentModel().eval()
        self.handled = 0

    def tokenize(self, text_ids):
        with span("tokenize", n_tokens=len(text_ids)) as s:
            toks = torch.as_tensor(text_ids, dtype=torch.long) % VOCAB
            s["features"] = np.bincount(toks.numpy() % 1024, minlength=1024).astype(np.float32)
            return toks

    def predict(self, toks):
        with span("model") as s, torch.inference_mode():
            logits = self.model(toks, torch.zeros(1, dtype=torch.long))
            probs = logits.softmax(-1)[0]
            s["probs"] = probs.numpy().copy()
            top = int(probs.argmax())
        return top, float(probs[top])

    def handle(self, rid, text_ids):
        request_id.set(rid)
        with span("request") as root:
            toks = self.tokenize(text_ids)
            intent, conf = self.predict(toks)
            root["intent"] = intent
        self.handled += 1
        return intent, conf, root["ms"]


def request_stream(rng):
    rid = 0
    while True:
        n = int(rng.integers(8, SEQ_LEN))
        yield f"req-{rid:07d}", rng.integers(0, 10 ** 6, size=n).tolist()
        rid += 1


def main():
    rng = np.random.default_rng(0)
    service = IntentService()
    t0 = time.time()
    last_log = t0
    latencies = []
    for rid, text in request_stream(rng):
        ctx = contextvars.copy_context()
        intent, conf, ms = ctx.run(service.handle, rid, text)
        latencies.append(ms)
        # simulated I/O between requests
        time.sleep(0.003)
        if time.time() - last_log > 3.0:
            recent = latencies[-500:]
            print(f"t={time.time() - t0:5.1f}s handled={service.handled} "
                  f"p50={np.median(recent):.2f}ms last_intent={intent}", flush=True)
            last_log = time.time()
            latencies = latencies[-1000:]
        if time.time() - t0 > RUN_SECONDS:
            break


if __name__ == "__main__":
    main()
