# expect: leak
# holder: trainer.batcher.replay.pool|batcher.replay.pool|replay.pool|self.pool
# pattern: 1D-CNN arrhythmia classifier on synthetic 12-lead ECG windows (torch.optim.SGD, Nesterov) with hard-example replay: a HardExampleReplay object (trainer.batcher.replay) keeps cloned high-loss windows in self.pool = deque(maxlen=pool_size) and mixes a few into every batch; at every epoch end a callback re-scores the pool with the current model and rebuilds it as `deque(sorted(self.pool, key=loss))` so the easiest examples sit at the left end where the deque evicts, but the rebuilt deque is created without maxlen, so from the end of epoch 1 on nothing is ever evicted and every step's ~18 cloned 12x320 float32 windows (~15 KB each) accumulate for the rest of the run
# step_ms: 25
"""Arrhythmia beat classifier with hard-example replay.

Synthetic 12-lead ECG windows (P / QRS / T complexes with class-specific
morphology, baseline wander and mains noise) are streamed from a generator.
Samples whose loss is above the running 80th percentile are cloned into a
replay pool; every batch is topped up with a handful of replayed windows.
At the end of each epoch the pool is re-scored with the current model and
re-ordered so that the examples the model has since learned are evicted first.
"""
import contextlib
import functools
import logging
import random
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger("ecg.replay")

FS = 250  # Hz


@dataclass
class DataConfig:
    window: int = 320
    leads: int = 12
    batch_size: int = 96
    class_probs: Tuple[float, ...] = (0.55, 0.15, 0.12, 0.10, 0.08)
    noise: float = 0.06
    seed: int = 7


@dataclass
class ReplayConfig:
    pool_size: int = 1200
    quantile: float = 0.8
    replay_per_batch: int = 16
    rescore_chunk: int = 1024


@dataclass
class TrainConfig:
    model: str = "ecgnet_small"
    epochs: int = 5
    steps_per_epoch: int = 140
    lr: float = 0.03
    momentum: float = 0.9
    weight_decay: float = 1e-4
    log_every: int = 70
    data: DataConfig = field(default_factory=DataConfig)
    replay: ReplayConfig = field(default_factory=ReplayConfig)


MODEL_REGISTRY: Dict[str, Callable[..., nn.Module]] = {}


def register_model(name):
    def deco(fn):
        MODEL_REGISTRY[name] = fn
        return fn
    return deco


class ECGNet(nn.Module):
    def __init__(self, leads, n_classes, width=32):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(leads, width, 7, padding=3), nn.BatchNorm1d(width), nn.ReLU(),
            nn.Conv1d(width, 2 * width, 5, stride=2, padding=2), nn.BatchNorm1d(2 * width), nn.ReLU(),
            nn.Conv1d(2 * width, 2 * width, 5, stride=2, padding=2), nn.BatchNorm1d(2 * width), nn.ReLU(),
        )
        self.head = nn.Linear(2 * width, n_classes)

    def forward(self, x):
        h = self.features(x)
        return self.head(h.mean(-1))


@register_model("ecgnet_small")
def ecgnet_small(leads, n_classes):
    return ECGNet(leads, n_classes, width=16)


@register_model("ecgnet_base")
def ecgnet_base(leads, n_classes):
    return ECGNet(leads, n_classes, width=48)


# --------------------------------------------------------------------------- data

def _bump(t, centre, width, amp):
    amp = np.broadcast_to(amp, centre.shape)[:, None]
    return amp * np.exp(-0.5 * ((t - centre[:, None]) / width[:, None]) ** 2)


# morphology per class: (qrs_width_s, t_amp, p_amp, rr_jitter)
MORPHOLOGY = {
    0: (0.010, 0.30, 0.12, 0.03),   # normal
    1: (0.024, -0.20, 0.12, 0.05),  # ventricular ectopic (wide QRS, inverted T)
    2: (0.011, 0.30, 0.00, 0.25),   # atrial fibrillation (no P, irregular)
    3: (0.016, 0.45, 0.12, 0.04),   # bundle branch block
    4: (0.010, 0.05, 0.30, 0.03),   # atrial ectopic
}


# projection of the cardiac dipole on the 12 standard leads (I, II, III, aVR, ..., V6)
LEAD_GAIN = np.array([0.8, 1.0, 0.3, -0.9, 0.25, 0.65, -0.4, 0.3, 0.9, 1.2, 1.0, 0.7], dtype=np.float32)


def synth_batch(cfg: DataConfig, rng: np.random.Generator):
    n = cfg.batch_size
    y = rng.choice(len(cfg.class_probs), size=n, p=np.asarray(cfg.class_probs))
    t = np.arange(cfg.window) / FS
    x = np.zeros((n, cfg.leads, cfg.window), dtype=np.float32)
    qrs_w = np.array([MORPHOLOGY[c][0] for c in y])
    t_amp = np.array([MORPHOLOGY[c][1] for c in y])
    p_amp = np.array([MORPHOLOGY[c][2] for c in y])
    jit = np.array([MORPHOLOGY[c][3] for c in y])
    beat = rng.uniform(0.15, 0.55, size=n)
    for k in range(3):
        c = beat + k * 0.8 * (1 + jit * rng.standard_normal(n))
        sig = (_bump(t, c, qrs_w, 1.0) + _bump(t, c + 0.25, np.full(n, 0.04), t_amp)
               + _bump(t, c - 0.16, np.full(n, 0.02), p_amp))
        x += LEAD_GAIN[None, :cfg.leads, None] * sig[:, None, :]
    wander = 0.1 * np.sin(2 * np.pi * rng.uniform(0.1, 0.4, (n, 1)) * t + rng.uniform(0, 6.3, (n, 1)))
    mains = 0.02 * np.sin(2 * np.pi * 50 * t)
    x += (wander + mains)[:, None, :]
    x += cfg.noise * rng.standard_normal(x.shape).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))


def beat_stream(cfg: DataConfig) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
    rng = np.random.default_rng(cfg.seed)
    while True:
        yield synth_batch(cfg, rng)


# --------------------------------------------------------------------------- replay

@dataclass
class ReplayItem:
    x: torch.Tensor
    y: int
    loss: float
    seen: int = 0


class HardExampleReplay:
    def __init__(self, cfg: ReplayConfig):
        self.cfg = cfg
        self.pool: deque = deque(maxlen=cfg.pool_size)
        self.threshold = float("inf")
        self._recent = deque(maxlen=2048)

    def observe(self, x, y, per_sample_loss):
        losses = per_sample_loss.detach()
        self._recent.extend(losses.tolist())
        if len(self._recent) >= 256:
            self.threshold = float(np.quantile(np.fromiter(self._recent, float), self.cfg.quantile))
        hard = torch.nonzero(losses > self.threshold).flatten()
        if len(hard) == 0:
            return 0
        hard_x = x[hard].clone()
        for j, (yi, li) in enumerate(zip(y[hard].tolist(), losses[hard].tolist())):
            self.pool.append(ReplayItem(hard_x[j], yi, li))
        return len(hard)

    def draw(self, k):
        if len(self.pool) < k:
            return None
        items = random.sample(self.pool, k)
        for it in items:
            it.seen += 1
        return torch.stack([it.x for it in items]), torch.tensor([it.y for it in items])

    @torch.no_grad()
    def rescore(self, model):
        items = list(self.pool)
        for s in range(0, len(items), self.cfg.rescore_chunk):
            chunk = items[s:s + self.cfg.rescore_chunk]
            xb = torch.stack([it.x for it in chunk])
            yb = torch.tensor([it.y for it in chunk])
            losses = F.cross_entropy(model(xb), yb, reduction="none").tolist()
            for it, l in zip(chunk, losses):
                it.loss = l
        # easiest on the left: those are the ones the deque drops first
        self.pool = deque(sorted(items, key=lambda it: it.loss))

    def __len__(self):
        return len(self.pool)


class ReplayBatcher:
    """Wraps the stream; tops each batch up with replayed windows."""

    def __init__(self, stream, replay: HardExampleReplay, k):
        self.stream = stream
        self.replay = replay
        self.k = k

    def __iter__(self):
        return self

    def __next__(self):
        x, y = next(self.stream)
        extra = self.replay.draw(self.k)
        if extra is not None:
            x = torch.cat([x, extra[0]])
            y = torch.cat([y, extra[1]])
        return x, y


# --------------------------------------------------------------------------- trainer

class Callback:
    def on_step_end(self, trainer, step, logs):
        pass

    def on_epoch_end(self, trainer, epoch, logs):
        pass


class ReplayMaintenance(Callback):
    def on_epoch_end(self, trainer, epoch, logs):
        model = trainer.model
        was_training = model.training
        model.eval()
        t0 = time.perf_counter()
        trainer.batcher.replay.rescore(model)
        model.train(was_training)
        log.info("epoch %d: re-scored replay pool (%d items) in %.2fs",
                 epoch, len(trainer.batcher.replay), time.perf_counter() - t0)


class ThroughputMeter(Callback):
    def __init__(self):
        self.t_last = time.perf_counter()
        self.samples = 0

    def on_step_end(self, trainer, step, logs):
        self.samples += logs["batch"]
        if (step + 1) % trainer.cfg.log_every == 0:
            now = time.perf_counter()
            log.info("step %5d  loss %.4f  acc %.3f  pool %5d  %.0f samples/s",
                     step + 1, logs["loss"], logs["acc"], len(trainer.batcher.replay),
                     self.samples / (now - self.t_last))
            self.t_last, self.samples = now, 0


@contextlib.contextmanager
def phase(name):
    t0 = time.perf_counter()
    yield
    log.info("%s took %.1fs", name, time.perf_counter() - t0)


class Trainer:
    def __init__(self, cfg: TrainConfig, callbacks=()):
        self.cfg = cfg
        torch.manual_seed(cfg.data.seed)
        random.seed(cfg.data.seed)
        build = MODEL_REGISTRY[cfg.model]
        self.model = build(cfg.data.leads, len(cfg.data.class_probs))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=cfg.lr, momentum=cfg.momentum,
                                         nesterov=True, weight_decay=cfg.weight_decay)
        total = cfg.epochs * cfg.steps_per_epoch
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, functools.partial(self._cosine, total=total))
        self.batcher = ReplayBatcher(beat_stream(cfg.data), HardExampleReplay(cfg.replay),
                                     cfg.replay.replay_per_batch)
        self.callbacks: List[Callback] = list(callbacks)
        self.history: List[dict] = []
        self.global_step = 0

    @staticmethod
    def _cosine(step, total):
        return 0.5 * (1 + np.cos(np.pi * min(step, total) / total))

    def _emit(self, hook, *args):
        for cb in self.callbacks:
            getattr(cb, hook)(self, *args)

    def train_step(self, x, y):
        logits = self.model(x)
        per_sample = F.cross_entropy(logits, y, reduction="none")
        loss = per_sample.mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        n = self.cfg.data.batch_size
        self.batcher.replay.observe(x[:n], y[:n], per_sample[:n])
        acc = (logits.argmax(1) == y).float().mean().item()
        return {"loss": loss.item(), "acc": acc, "batch": len(y)}

    def fit(self):
        self.model.train()
        for epoch in range(self.cfg.epochs):
            losses = []
            for _ in range(self.cfg.steps_per_epoch):
                x, y = next(self.batcher)
                logs = self.train_step(x, y)
                losses.append(logs["loss"])
                self._emit("on_step_end", self.global_step, logs)
                self.global_step += 1
            summary = {"epoch": epoch, "loss": float(np.mean(losses))}
            self.history.append(summary)
            self._emit("on_epoch_end", epoch, summary)
            log.info("epoch %d done: mean loss %.4f", epoch, summary["loss"])
        return self.history


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    torch.set_num_threads(1)
    cfg = TrainConfig()
    trainer = Trainer(cfg, callbacks=[ThroughputMeter(), ReplayMaintenance()])
    with phase("training"):
        history = trainer.fit()
    print("final epoch loss: %.4f  replay pool: %d" % (history[-1]["loss"], len(trainer.batcher.replay)))


if __name__ == "__main__":
    main()
