# expect: leak
# holder: trainer.joiner.pending|joiner.pending|self.pending
# pattern: online payment-fraud MLP (hashed categorical embeddings + dense features, torch.optim.Adam) trained from delayed chargeback labels: every scored batch is parked in DelayedLabelJoiner.pending, a dict keyed by the global step, until its labels arrive 4-60 steps later; ~35% of batches never get labels, and an on_step_end callback expires entries older than max_label_wait, but the trainer passes the callback the within-day batch index instead of the global step, so on the first replayed day the cut-off matches the keys and pending stays bounded, while from the second day on the cut-off is far below every key and the never-labelled batches (feature matrix + categorical ids, ~110 KB each) pile up for the rest of the run
# step_ms: 2.5
"""Online fraud model trained from delayed chargeback feedback.

Transactions are replayed day by day from a synthetic generator. Each batch is
scored immediately (that is what production would do) and parked until its
chargeback labels come back from the issuer feed, which happens a random
number of steps later -- or never, for merchants that do not report. Labelled
batches are used for an Adam update; batches whose labels have not arrived
after ``max_label_wait`` steps are expired.
"""
import contextlib
import functools
import heapq
import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger("fraud.online")


@dataclass
class StreamConfig:
    batch_size: int = 384
    n_dense: int = 56
    n_cat: int = 8
    hash_buckets: int = 20011
    fraud_rate: float = 0.04
    steps_per_day: int = 2350
    seed: int = 11


@dataclass
class FeedbackConfig:
    min_delay: int = 4
    mean_delay: float = 18.0
    max_label_wait: int = 60
    unreported_fraction: float = 0.35


@dataclass
class TrainConfig:
    days: int = 3
    lr: float = 2e-3
    emb_dim: int = 12
    hidden: int = 128
    log_every: int = 500
    stream: StreamConfig = field(default_factory=StreamConfig)
    feedback: FeedbackConfig = field(default_factory=FeedbackConfig)


# ------------------------------------------------------------------ features

FEATURE_TRANSFORMS: Dict[str, Callable[[np.ndarray], np.ndarray]] = {}


def transform(name):
    def deco(fn):
        FEATURE_TRANSFORMS[name] = fn
        return fn
    return deco


@transform("log_amount")
def _log_amount(x):
    x[:, 0] = np.log1p(np.abs(x[:, 0]))
    return x


@transform("clip")
def _clip(x):
    return np.clip(x, -6.0, 6.0, out=x)


class Batch(NamedTuple):
    dense: np.ndarray
    cats: np.ndarray
    labels: np.ndarray
    reported: bool
    delay: int


def transaction_stream(cfg: StreamConfig, fb: FeedbackConfig, day: int) -> Iterator[Batch]:
    rng = np.random.default_rng(cfg.seed + 1000 * day)
    w = np.random.default_rng(cfg.seed).standard_normal(cfg.n_dense) / np.sqrt(cfg.n_dense)
    risky = np.random.default_rng(cfg.seed + 1).random(cfg.hash_buckets) < 0.02
    for _ in range(cfg.steps_per_day):
        n = cfg.batch_size
        dense = rng.standard_normal((n, cfg.n_dense)).astype(np.float32)
        dense[:, 0] = rng.lognormal(3.5, 1.2, n)
        cats = rng.zipf(1.3, size=(n, cfg.n_cat)) % cfg.hash_buckets
        logit = dense[:, 1:] @ w[1:] * 1.5 + 2.5 * risky[cats[:, 0]] + 0.002 * dense[:, 0] - 4.0
        labels = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.float32)
        reported = rng.random() > fb.unreported_fraction
        delay = fb.min_delay + int(rng.exponential(fb.mean_delay - fb.min_delay))
        yield Batch(dense, cats.astype(np.int64), labels, reported, delay)


# ------------------------------------------------------------------ model

class FraudNet(nn.Module):
    def __init__(self, cfg: TrainConfig):
        super().__init__()
        s = cfg.stream
        self.emb = nn.EmbeddingBag(s.hash_buckets, cfg.emb_dim, mode="sum")
        self.field_offsets = nn.Parameter(torch.randn(s.n_cat, cfg.emb_dim) * 0.01)
        self.mlp = nn.Sequential(
            nn.Linear(s.n_dense + cfg.emb_dim * s.n_cat, cfg.hidden), nn.ReLU(),
            nn.Linear(cfg.hidden, cfg.hidden // 2), nn.ReLU(),
            nn.Linear(cfg.hidden // 2, 1),
        )

    def forward(self, dense, cats):
        n, k = cats.shape
        e = self.emb(cats.reshape(-1, 1)).reshape(n, k, -1) + self.field_offsets
        return self.mlp(torch.cat([dense, e.flatten(1)], dim=1)).squeeze(1)


# ------------------------------------------------------------------ feedback join

@dataclass
class Pending:
    dense: torch.Tensor
    cats: torch.Tensor
    scores: torch.Tensor
    scored_at: float


class LabelFeed:
    """Simulates the issuer chargeback feed: labels show up `delay` steps later (or never)."""

    def __init__(self):
        self._heap: List[tuple] = []

    def schedule(self, step, labels, delay, reported):
        if reported:
            heapq.heappush(self._heap, (step + delay, step, labels))

    def arrivals(self, now):
        while self._heap and self._heap[0][0] <= now:
            _, step, labels = heapq.heappop(self._heap)
            yield step, labels


class DelayedLabelJoiner:
    def __init__(self, max_wait):
        self.max_wait = max_wait
        self.pending: Dict[int, Pending] = {}
        self.expired = 0
        self.joined = 0

    def park(self, step, item: Pending):
        self.pending[step] = item

    def join(self, step) -> Optional[Pending]:
        item = self.pending.pop(step, None)
        if item is not None:
            self.joined += 1
        return item

    def expire(self, now):
        cutoff = now - self.max_wait
        stale = [s for s in self.pending if s < cutoff]
        for s in stale:
            del self.pending[s]
        self.expired += len(stale)


# ------------------------------------------------------------------ trainer

class Callback:
    def on_step_end(self, trainer, step):
        pass

    def on_day_end(self, trainer, day):
        pass


class ExpirePending(Callback):
    def on_step_end(self, trainer, step):
        trainer.joiner.expire(step)


class ProgressLogger(Callback):
    def __init__(self, every):
        self.every = every
        self.t0 = time.perf_counter()

    def on_step_end(self, trainer, step):
        if (trainer.global_step + 1) % self.every == 0:
            m = trainer.metrics
            auc = trainer.running_auc()
            log.info("step %6d  loss %.4f  auc %.3f  joined %d  expired %d  parked %d  (%.1fs)",
                     trainer.global_step + 1, np.mean(m["loss"][-200:]) if m["loss"] else float("nan"),
                     auc, trainer.joiner.joined, trainer.joiner.expired, len(trainer.joiner.pending),
                     time.perf_counter() - self.t0)


@contextlib.contextmanager
def evaluating(model):
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was)


class OnlineTrainer:
    def __init__(self, cfg: TrainConfig, callbacks=()):
        self.cfg = cfg
        torch.manual_seed(cfg.stream.seed)
        self.model = FraudNet(cfg)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        self.pos_weight = torch.tensor((1 - cfg.stream.fraud_rate) / cfg.stream.fraud_rate) ** 0.5
        self.loss_fn = functools.partial(F.binary_cross_entropy_with_logits, pos_weight=self.pos_weight)
        self.joiner = DelayedLabelJoiner(cfg.feedback.max_label_wait)
        self.feed = LabelFeed()
        self.callbacks = list(callbacks)
        self.transforms = [FEATURE_TRANSFORMS[n] for n in ("log_amount", "clip")]
        self.metrics: Dict[str, list] = defaultdict(list)
        self._score_buf: List[np.ndarray] = []
        self._label_buf: List[np.ndarray] = []
        self.global_step = 0

    def _prepare(self, batch: Batch):
        dense = batch.dense
        for fn in self.transforms:
            dense = fn(dense)
        return torch.from_numpy(dense), torch.from_numpy(batch.cats)

    def score(self, dense, cats):
        with evaluating(self.model):
            return torch.sigmoid(self.model(dense, cats))

    def update(self, item: Pending, labels: np.ndarray):
        y = torch.from_numpy(labels)
        logits = self.model(item.dense, item.cats)
        loss = self.loss_fn(logits, y)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.metrics["loss"].append(loss.item())
        self._score_buf.append(item.scores.numpy())
        self._label_buf.append(labels)
        if len(self._score_buf) > 64:
            del self._score_buf[:-64], self._label_buf[:-64]

    def running_auc(self):
        if not self._score_buf:
            return float("nan")
        s = np.concatenate(self._score_buf)
        y = np.concatenate(self._label_buf)
        order = np.argsort(s)
        ranks = np.empty(len(s))
        ranks[order] = np.arange(1, len(s) + 1)
        npos = y.sum()
        nneg = len(y) - npos
        if npos == 0 or nneg == 0:
            return float("nan")
        return float((ranks[y == 1].sum() - npos * (npos + 1) / 2) / (npos * nneg))

    def run_day(self, day):
        for batch_idx, batch in enumerate(transaction_stream(self.cfg.stream, self.cfg.feedback, day)):
            dense, cats = self._prepare(batch)
            scores = self.score(dense, cats)
            self.joiner.park(self.global_step, Pending(dense, cats, scores, time.time()))
            self.feed.schedule(self.global_step, batch.labels, batch.delay, batch.reported)
            for step, labels in self.feed.arrivals(self.global_step):
                item = self.joiner.join(step)
                if item is not None:
                    self.update(item, labels)
            for cb in self.callbacks:
                cb.on_step_end(self, batch_idx)
            self.global_step += 1
        for cb in self.callbacks:
            cb.on_day_end(self, day)

    def fit(self):
        for day in range(self.cfg.days):
            t0 = time.perf_counter()
            self.run_day(day)
            log.info("day %d replayed in %.1fs (auc %.3f)", day, time.perf_counter() - t0, self.running_auc())


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    torch.set_num_threads(1)
    cfg = TrainConfig()
    trainer = OnlineTrainer(cfg, callbacks=[ExpirePending(), ProgressLogger(cfg.log_every)])
    trainer.fit()
    print(f"done: {trainer.global_step} steps, {trainer.joiner.joined} labelled batches, "
          f"final auc {trainer.running_auc():.3f}")


if __name__ == "__main__":
    main()
