# expect: no_leak
# pattern: the generator with_recent_context() keeps a local `context` tensor rebuilt every batch as torch.cat([context, emb])[-context_rows:]; the slice is a view that pins the freshly concatenated tensor (at most context_rows + one batch rows) and the previous context is freed, so memory climbs while the window fills (first ~third of the run) and then stays flat (inference only, torch.no_grad, no optimizer)
# step_ms: 50
"""Streaming kNN anomaly scoring for network-flow embeddings.

Flow records arrive in batches of 512.  A frozen encoder maps the 48 raw flow
statistics to 128-d embeddings, and every flow is scored by its mean distance
to the k nearest embeddings among a random sample of the most recent
--context-rows flows.  Flows whose score exceeds the running 99.5th percentile
are counted as alerts.
"""
import argparse
import math
import time

import numpy as np
import torch
from torch import nn

N_RAW = 48


def flow_batches(seed, batch_size):
    """Synthetic flow statistics: a few traffic profiles plus rare scanning/exfil bursts."""
    rng = np.random.default_rng(seed)
    profiles = rng.normal(0, 1, (6, N_RAW)).astype(np.float32)
    anomaly = rng.normal(0, 3, N_RAW).astype(np.float32)
    t = 0
    while True:
        t += 1
        drift = 0.3 * math.sin(t / 200.0)
        which = rng.integers(0, len(profiles), batch_size)
        x = profiles[which] + drift + 0.4 * rng.standard_normal((batch_size, N_RAW), dtype=np.float32)
        n_bad = rng.binomial(batch_size, 0.003)
        if n_bad:
            x[:n_bad] = anomaly + rng.standard_normal((n_bad, N_RAW), dtype=np.float32)
        yield torch.from_numpy(x)


def with_recent_context(batches, context_rows):
    """Yield (batch, context) where context holds the embeddings of the latest flows."""
    context = None
    for emb in batches:
        yield emb, context
        context = emb if context is None else torch.cat([context, emb])[-context_rows:]


class RunningQuantile:
    """Quantile of the last `size` scores, kept in a fixed numpy ring."""

    def __init__(self, q, size=20000):
        self.q = q
        self.buf = np.full(size, np.nan, dtype=np.float32)
        self.pos = 0

    def update(self, values):
        n = len(values)
        idx = (self.pos + np.arange(n)) % len(self.buf)
        self.buf[idx] = values
        self.pos = (self.pos + n) % len(self.buf)

    def value(self):
        return float(np.nanquantile(self.buf, self.q))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=330)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--context-rows", type=int, default=80000)
    parser.add_argument("--sample", type=int, default=4096, help="context rows sampled per batch")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--log-every-s", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    encoder = nn.Sequential(nn.Linear(N_RAW, 256), nn.ReLU(), nn.Linear(256, 128)).eval()
    threshold = RunningQuantile(0.995)

    def embeddings():
        for raw in flow_batches(args.seed, args.batch_size):
            with torch.no_grad():
                yield encoder(raw)

    alerts = scored = 0
    t0 = last = time.time()
    stream = with_recent_context(embeddings(), args.context_rows)
    for step, (emb, context) in enumerate(stream, 1):
        if context is not None and len(context) >= 4 * args.k:
            with torch.no_grad():
                pick = torch.randint(len(context), (min(args.sample, len(context)),))
                d = torch.cdist(emb, context[pick])
                score = d.topk(args.k, largest=False).values.mean(1).numpy()
            if step > 20:
                alerts += int((score > threshold.value()).sum())
            threshold.update(score)
            scored += len(score)

        now = time.time()
        if now - last >= args.log_every_s:
            ctx = 0 if context is None else len(context)
            print(f"batch {step:4d}  context {ctx:6d} flows  scored {scored}  alerts {alerts}  "
                  f"thr {threshold.value():.3f}  {(now - t0) / step * 1000:.0f} ms/batch", flush=True)
            last = now
        if step >= args.batches:
            break

    print(f"done: {scored} flows scored, {alerts} alerts ({alerts / max(scored, 1):.4%}) "
          f"in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
