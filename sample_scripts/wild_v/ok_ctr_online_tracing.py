# expect: no_leak
# holder:
# pattern: online click-through-rate learner (hashed-feature EmbeddingBag + small MLP, torch.optim.SGD with momentum, one update per 128-event micro-batch, ~1 ms per step, code in main() + a Learner class and module-level tracing helpers); it looks suspicious because every step opens trace spans through a contextvars.ContextVar (spans keep the batch tensors in their attrs), batches failing validation raise in the middle of the step, per-step DEBUG records carrying tensors go into a logging.handlers.MemoryHandler, and sampled slow spans are kept for inspection; but every span is opened with a `with` block whose finally resets the ContextVar token (also on the exception path), finished spans are reduced to floats except for a deque(maxlen=32) of sampled slow spans, and the MemoryHandler (capacity 256) has a target, so each flush hands the records to a RingHandler that keeps only the last 200 formatted lines and clears the buffer: memory is flat after the first few hundred steps
# step_ms: 1
"""Online CTR learner with request tracing.

Events (hashed categorical fields + a few dense features, click label)
arrive in micro-batches.  Each batch is validated, scored and used for
one SGD update.  The step is traced with nested spans; the slowest
spans are sampled (with their inputs) for the debugging page, and debug
logging is buffered in memory and shipped to the in-process log viewer.
"""
from __future__ import annotations

import argparse
import contextlib
import contextvars
import logging
import logging.handlers
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
log = logging.getLogger("ctr")

N_FIELDS = 12
N_DENSE = 8
BUCKETS = 1 << 15
BATCH = 128


@dataclass
class Span:
    name: str
    parent: Optional["Span"]
    start: float
    attrs: dict[str, Any] = field(default_factory=dict)
    end: float = 0.0
    error: Optional[str] = None


current_span: contextvars.ContextVar[Optional[Span]] = contextvars.ContextVar("current_span", default=None)


class Tracer:
    def __init__(self, sample_slower_than_ms: float) -> None:
        self.threshold = sample_slower_than_ms / 1000.0
        self.sampled: deque[Span] = deque(maxlen=32)
        self.count = 0
        self.total_s: dict[str, float] = {}

    @contextlib.contextmanager
    def span(self, name: str, **attrs: Any):
        sp = Span(name, current_span.get(), time.perf_counter(), attrs)
        token = current_span.set(sp)
        try:
            yield sp
        except Exception as exc:
            sp.error = type(exc).__name__
            raise
        finally:
            sp.end = time.perf_counter()
            current_span.reset(token)
            self._finish(sp)

    def _finish(self, sp: Span) -> None:
        dur = sp.end - sp.start
        self.count += 1
        self.total_s[sp.name] = self.total_s.get(sp.name, 0.0) + dur
        if dur > self.threshold and sp.parent is None:
            self.sampled.append(sp)
        else:
            sp.attrs.clear()


class RingHandler(logging.Handler):
    """Keeps the most recent formatted lines for the log viewer."""

    def __init__(self, maxlen: int) -> None:
        super().__init__()
        self.lines: deque[str] = deque(maxlen=maxlen)

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


class InvalidBatch(ValueError):
    pass


class CTRModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.EmbeddingBag(BUCKETS, 16, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(16 + N_DENSE, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([self.emb(ids, offsets), dense], 1)).squeeze(1)


class EventStream:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.w = self.rng.normal(0, 0.6, BUCKETS).astype(np.float32)
        self.offsets = torch.arange(0, BATCH * N_FIELDS, N_FIELDS)

    def next(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        r = self.rng
        ids = (r.zipf(1.2, (BATCH, N_FIELDS)) * 7919 + np.arange(N_FIELDS) * 104729) % BUCKETS
        dense = r.normal(0, 1, (BATCH, N_DENSE)).astype(np.float32)
        if r.random() < 0.03:
            dense[r.integers(0, BATCH)] = np.inf
        logit = self.w[ids].sum(1) * 0.3 + dense[:, 0] - 2.0
        y = (r.random(BATCH) < 1 / (1 + np.exp(-np.clip(logit, -30, 30)))).astype(np.float32)
        return (torch.from_numpy(ids.reshape(-1)), self.offsets, torch.from_numpy(dense),
                torch.from_numpy(y))


class Learner:
    def __init__(self, tracer: Tracer, lr: float) -> None:
        self.model = CTRModel()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        self.tracer = tracer
        self.loss_ema: Optional[float] = None
        self.rejected = 0

    def step(self, step: int, ids, offsets, dense, y) -> None:
        tr = self.tracer
        with tr.span("update", step=step, dense=dense, labels=y):
            with tr.span("validate"):
                if not torch.isfinite(dense).all():
                    raise InvalidBatch(f"non-finite dense features at step {step}")
            with tr.span("forward_backward"):
                logits = self.model(ids, offsets, dense)
                loss = nn.functional.binary_cross_entropy_with_logits(logits, y)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
            with tr.span("sgd"):
                self.opt.step()
            v = loss.item()
            self.loss_ema = v if self.loss_ema is None else 0.995 * self.loss_ema + 0.005 * v
            log.debug("step %d loss %.4f logits[:4]=%s", step, v, logits[:4].detach())


def main() -> None:
    ap = argparse.ArgumentParser(description="online CTR learner")
    ap.add_argument("--steps", type=int, default=12000)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    torch.manual_seed(args.seed)

    ring = RingHandler(maxlen=200)
    ring.setFormatter(logging.Formatter("%(relativeCreated)d %(levelname)s %(message)s"))
    mem = logging.handlers.MemoryHandler(capacity=256, flushLevel=logging.WARNING, target=ring)
    log.setLevel(logging.DEBUG)
    log.addHandler(mem)
    console = logging.StreamHandler()
    console.setLevel(logging.INFO)
    console.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    log.addHandler(console)

    tracer = Tracer(sample_slower_than_ms=1.5)
    learner = Learner(tracer, args.lr)
    stream = EventStream(args.seed)
    t0 = last = time.perf_counter()
    for step in range(1, args.steps + 1):
        batch = stream.next()
        try:
            learner.step(step, *batch)
        except InvalidBatch as exc:
            learner.rejected += 1
            if learner.rejected % 50 == 1:
                log.warning("dropped batch: %s", exc)
        now = time.perf_counter()
        if now - last > 3.0 or step == args.steps:
            log.info("step %d/%d loss_ema=%.4f rejected=%d spans=%d sampled=%d log_lines=%d (%.2f ms/step)",
                     step, args.steps, learner.loss_ema, learner.rejected, tracer.count,
                     len(tracer.sampled), len(ring.lines), 1000 * (now - t0) / step)
            last = now
    mem.flush()
    per_span = {k: round(1000 * v / args.steps, 3) for k, v in tracer.total_s.items()}
    log.info("mean ms per step by span: %s", per_span)


if __name__ == "__main__":
    main()
