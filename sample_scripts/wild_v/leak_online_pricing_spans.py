# expect: leak
# holder: _current_span|Span.parent|Span.attrs
# pattern: online demand-forecasting learner for a pricing service (MLP on 96 dense features, torch.optim.Adam, one update per 512-row micro-batch, ~3 ms per step, code in an OnlineLearner class with start/end hooks + module-level tracing helpers); every batch gets a trace span created by the on_batch_start hook (start_span sets a contextvars.ContextVar _current_span to the new Span and remembers the token; span.attrs keep the batch's feature and target tensors for sampled debug dumps) and closed by the on_batch_end hook (end_span resets the token); batches that fail the data-quality check raise DataQualityError between the two hooks, the learner catches it, quarantines the batch summary and moves on, so end_span is never called for them: _current_span keeps pointing at the abandoned span, the next spans take it as parent, and every later abandoned span links to the previous one through Span.parent, a chain that keeps every rejected batch's tensors (~200 KB each, ~8% of batches) alive for the whole run
# step_ms: 3
"""Online demand forecaster for the dynamic-pricing service.

Consumes micro-batches of (listing, context) feature rows with the
observed demand, runs a data-quality gate and updates a small MLP
online.  Every batch is traced (nested spans for the quality gate,
forward/backward and the optimizer step) so slow batches can be
inspected on the tracing dashboard; summaries of finished spans go to
an in-process exporter with a bounded buffer.
"""
from __future__ import annotations

import argparse
import contextlib
import contextvars
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
log = logging.getLogger("pricing.online")

N_FEATURES = 96
BATCH = 512


# --------------------------------------------------------------------------- tracing
@dataclass
class Span:
    name: str
    parent: Optional["Span"]
    start: float
    attrs: dict[str, Any] = field(default_factory=dict)
    end: Optional[float] = None
    token: Optional[contextvars.Token] = None

    @property
    def depth(self) -> int:
        d, p = 0, self.parent
        while p is not None and d < 8:
            d, p = d + 1, p.parent
        return d


_current_span: contextvars.ContextVar[Optional[Span]] = contextvars.ContextVar("current_span", default=None)


class SpanExporter:
    def __init__(self, maxlen: int = 2000) -> None:
        self.buffer: deque[tuple[str, float, int]] = deque(maxlen=maxlen)
        self.exported = 0

    def export(self, span: Span) -> None:
        self.buffer.append((span.name, (span.end or span.start) - span.start, span.depth))
        self.exported += 1

    def p95_ms(self, name: str) -> float:
        d = [x[1] for x in self.buffer if x[0] == name]
        return 1000 * float(np.percentile(d, 95)) if d else float("nan")


EXPORTER = SpanExporter()


def start_span(name: str, **attrs: Any) -> Span:
    span = Span(name, _current_span.get(), time.perf_counter(), attrs)
    span.token = _current_span.set(span)
    return span


def end_span(span: Span) -> None:
    span.end = time.perf_counter()
    if span.token is not None:
        _current_span.reset(span.token)
        span.token = None
    EXPORTER.export(span)


@contextlib.contextmanager
def traced(name: str, **attrs: Any):
    span = start_span(name, **attrs)
    try:
        yield span
    finally:
        end_span(span)


# --------------------------------------------------------------------------- data
class DataQualityError(ValueError):
    def __init__(self, reason: str, batch_id: int, n_bad: int) -> None:
        super().__init__(f"batch {batch_id}: {reason} ({n_bad} rows)")
        self.reason, self.batch_id, self.n_bad = reason, batch_id, n_bad


@dataclass
class Batch:
    batch_id: int
    x: torch.Tensor
    y: torch.Tensor


class ListingStream:
    """Synthetic feed of listing features with drifting price elasticity."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.w = self.rng.normal(0, 1, N_FEATURES) / np.sqrt(N_FEATURES)
        self.n = 0

    def next(self) -> Batch:
        self.n += 1
        self.w += self.rng.normal(0, 0.002, N_FEATURES)
        x = self.rng.normal(0, 1, (BATCH, N_FEATURES)).astype(np.float32)
        y = np.log1p(np.exp(x @ self.w + 0.3 * np.sin(x[:, 0] * x[:, 1]))) + self.rng.normal(0, 0.1, BATCH)
        u = self.rng.random()
        if u < 0.05:      # upstream join produced NaN prices
            x[self.rng.integers(0, BATCH, 40), 3] = np.nan
        elif u < 0.08:    # currency conversion glitch
            y[: BATCH // 4] *= 100.0
        return Batch(self.n, torch.from_numpy(x), torch.from_numpy(y.astype(np.float32)))


def check_quality(batch: Batch, y_scale: float) -> None:
    n_nan = int(torch.isnan(batch.x).any(1).sum())
    if n_nan:
        raise DataQualityError("non-finite features", batch.batch_id, n_nan)
    n_out = int((batch.y > 20 * y_scale).sum())
    if n_out > BATCH // 20:
        raise DataQualityError("target out of range", batch.batch_id, n_out)


# --------------------------------------------------------------------------- learner
class OnlineLearner:
    def __init__(self, lr: float) -> None:
        self.model = nn.Sequential(nn.Linear(N_FEATURES, 256), nn.GELU(), nn.Linear(256, 128),
                                   nn.GELU(), nn.Linear(128, 1))
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.loss_fn = nn.HuberLoss(delta=1.0)
        self.y_scale = 1.0
        self.quarantine: deque[tuple[int, str, int]] = deque(maxlen=500)
        self.loss_ema: Optional[float] = None
        self.updates = 0

    # hooks used by the serving framework's consumer loop
    def on_batch_start(self, batch: Batch) -> Span:
        return start_span("online_update", batch_id=batch.batch_id, features=batch.x, targets=batch.y)

    def on_batch_end(self, span: Span, loss: float) -> None:
        span.attrs["loss"] = loss
        end_span(span)

    def process(self, batch: Batch) -> float:
        with traced("quality_gate"):
            check_quality(batch, self.y_scale)
        with traced("forward_backward"):
            pred = self.model(batch.x).squeeze(1)
            loss = self.loss_fn(pred, batch.y)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
        with traced("optimizer_step"):
            nn.utils.clip_grad_norm_(self.model.parameters(), 5.0)
            self.opt.step()
        self.y_scale = 0.99 * self.y_scale + 0.01 * float(batch.y.abs().mean())
        self.updates += 1
        return loss.item()

    def consume(self, batch: Batch) -> None:
        span = self.on_batch_start(batch)
        try:
            loss = self.process(batch)
        except DataQualityError as err:
            self.quarantine.append((err.batch_id, err.reason, err.n_bad))
            return
        self.loss_ema = loss if self.loss_ema is None else 0.98 * self.loss_ema + 0.02 * loss
        self.on_batch_end(span, loss)


def main() -> None:
    ap = argparse.ArgumentParser(description="online demand forecaster")
    ap.add_argument("--batches", type=int, default=5000)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.manual_seed(args.seed)

    stream = ListingStream(args.seed)
    learner = OnlineLearner(args.lr)
    t0 = last = time.perf_counter()
    for i in range(1, args.batches + 1):
        learner.consume(stream.next())
        now = time.perf_counter()
        if now - last > 3.0 or i == args.batches:
            log.info("batch %d/%d updates=%d quarantined=%d loss_ema=%.4f p95(update)=%.2f ms (%.1f ms/batch)",
                     i, args.batches, learner.updates, len(learner.quarantine), learner.loss_ema or float("nan"),
                     EXPORTER.p95_ms("online_update"), 1000 * (now - t0) / i)
            last = now
    reasons: dict[str, int] = {}
    for _, r, _ in learner.quarantine:
        reasons[r] = reasons.get(r, 0) + 1
    log.info("quarantine reasons: %s; spans exported: %d", reasons, EXPORTER.exported)


if __name__ == "__main__":
    main()
