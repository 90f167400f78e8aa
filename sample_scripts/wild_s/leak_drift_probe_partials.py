# expect: leak
# holder: trainer._callbacks['on_train_step_end']|trainer._callbacks|self._callbacks
# pattern: n-gram CNN sentiment classifier on synthetic token sequences (torch.optim.SGD with momentum) with a RepresentationDrift callback: after every validation it embeds a fixed probe set and (re-)arms its per-step drift tracker with trainer.add_callback("on_train_step_end", functools.partial(self.track, reference=ref, ref_step=step)); add_callback is meant to be idempotent (`if fn not in cbs: cbs.append(fn)`), but functools.partial objects compare by identity, so every validation appends one more partial to the trainer's callback list, each holding that validation's probe-set embeddings (2048x256 float64, 4 MB); the stale trackers also keep writing to their own old drift-log keys, while the report only reads the newest one
# step_ms: 27
"""Sentiment classifier with representation-drift monitoring.

Synthetic reviews are token sequences in which a few sentiment-bearing
bigrams are planted among Zipf-distributed filler tokens. A 1D convolutional
n-gram encoder with max-pooling feeds a small classifier. After each
validation, the drift monitor embeds a fixed probe set and from then on tracks
an RBF-MMD between the current training features and that reference.
"""
import contextlib
import functools
import logging
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, DefaultDict, Dict, List

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger("sentiment")


@dataclass
class DataConfig:
    vocab: int = 6000
    seq_len: int = 48
    n_cue_bigrams: int = 40
    batch_size: int = 96
    probe_size: int = 2048
    val_size: int = 1024
    seed: int = 21


@dataclass
class ModelConfig:
    emb_dim: int = 64
    channels: int = 128
    kernel_sizes: tuple = (2, 3)
    dropout: float = 0.2


@dataclass
class TrainConfig:
    steps: int = 640
    lr: float = 0.05
    momentum: float = 0.9
    val_every: int = 20
    drift_every: int = 5
    log_every: int = 100
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)


# ---------------------------------------------------------------------- data

class ReviewSynth:
    def __init__(self, cfg: DataConfig):
        self.cfg = cfg
        rng = np.random.default_rng(cfg.seed)
        ranks = np.arange(1, cfg.vocab - 100)
        self.p = (1.0 / ranks ** 1.05) / (1.0 / ranks ** 1.05).sum()
        cue_tokens = np.arange(cfg.vocab - 100, cfg.vocab)
        self.cues = rng.choice(cue_tokens, size=(cfg.n_cue_bigrams, 2))
        self.polarity = np.where(np.arange(cfg.n_cue_bigrams) % 2 == 0, 1, -1)

    def sample(self, n, rng):
        c = self.cfg
        x = rng.choice(len(self.p), size=(n, c.seq_len), p=self.p) + 1
        y = np.zeros(n, dtype=np.int64)
        for i in range(n):
            k = rng.integers(1, 4)
            picks = rng.integers(0, c.n_cue_bigrams, size=k)
            score = self.polarity[picks].sum() + rng.normal(0, 0.3)
            for j, b in enumerate(picks):
                pos = rng.integers(0, c.seq_len - 1)
                x[i, pos:pos + 2] = self.cues[b]
            y[i] = int(score > 0)
        return torch.from_numpy(x), torch.from_numpy(y)

    def batches(self, seed):
        rng = np.random.default_rng(seed)
        while True:
            yield self.sample(self.cfg.batch_size, rng)


# ---------------------------------------------------------------------- model

class NGramCNN(nn.Module):
    def __init__(self, vocab, cfg: ModelConfig):
        super().__init__()
        self.emb = nn.Embedding(vocab + 1, cfg.emb_dim, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(cfg.emb_dim, cfg.channels, k) for k in cfg.kernel_sizes)
        self.drop = nn.Dropout(cfg.dropout)
        self.out_dim = cfg.channels * len(cfg.kernel_sizes)
        self.cls = nn.Linear(self.out_dim, 2)

    def features(self, x):
        e = self.emb(x).transpose(1, 2)
        return torch.cat([F.relu(c(e)).amax(-1) for c in self.convs], dim=1)

    def forward(self, x):
        f = self.features(x)
        return self.cls(self.drop(f)), f


# ---------------------------------------------------------------------- trainer

class Trainer:
    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg
        torch.manual_seed(cfg.data.seed)
        self.synth = ReviewSynth(cfg.data)
        self.model = NGramCNN(cfg.data.vocab, cfg.model)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=cfg.lr, momentum=cfg.momentum,
                                         weight_decay=1e-4)
        self.scheduler = torch.optim.lr_scheduler.OneCycleLR(self.optimizer, max_lr=cfg.lr,
                                                             total_steps=cfg.steps, pct_start=0.15)
        rng = np.random.default_rng(cfg.data.seed + 1)
        self.val_x, self.val_y = self.synth.sample(cfg.data.val_size, rng)
        self._callbacks: DefaultDict[str, List[Callable]] = defaultdict(list)
        self.step = 0
        self.history: List[dict] = []

    def add_callback(self, event, fn):
        cbs = self._callbacks[event]
        if fn not in cbs:  # registering twice is a no-op
            cbs.append(fn)

    def remove_callback(self, event, fn):
        cbs = self._callbacks[event]
        if fn in cbs:
            cbs.remove(fn)

    def fire(self, event, **kw):
        for fn in list(self._callbacks[event]):
            fn(self, **kw)

    @torch.no_grad()
    def validate(self):
        self.model.eval()
        logits, _ = self.model(self.val_x)
        self.model.train()
        acc = (logits.argmax(1) == self.val_y).float().mean().item()
        loss = F.cross_entropy(logits, self.val_y).item()
        return {"val_acc": acc, "val_loss": loss}

    def fit(self):
        data = self.synth.batches(self.cfg.data.seed + 2)
        self.model.train()
        self.fire("on_fit_start")
        while self.step < self.cfg.steps:
            x, y = next(data)
            logits, feats = self.model(x)
            loss = F.cross_entropy(logits, y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()
            self.fire("on_train_step_end", step=self.step, loss=loss.item(), features=feats.detach())
            self.step += 1
            if self.step % self.cfg.val_every == 0:
                metrics = self.validate()
                self.history.append({"step": self.step, **metrics})
                self.fire("on_validation_end", step=self.step, metrics=metrics)


# ---------------------------------------------------------------------- callbacks

def rbf_mmd(a, b, gamma=None):
    if gamma is None:
        gamma = 1.0 / a.shape[1]
    aa = torch.exp(-gamma * torch.cdist(a, a).pow(2)).mean()
    bb = torch.exp(-gamma * torch.cdist(b, b).pow(2)).mean()
    ab = torch.exp(-gamma * torch.cdist(a, b).pow(2)).mean()
    return float(aa + bb - 2 * ab)


class RepresentationDrift:
    """After each validation: embed the probe set and track MMD(train features, probe) per step."""

    def __init__(self, synth: ReviewSynth, probe_size, every, subset=256):
        rng = np.random.default_rng(12345)
        self.probe_x, _ = synth.sample(probe_size, rng)
        self.every = every
        self.subset = subset
        self.drift: DefaultDict[int, List[tuple]] = defaultdict(list)
        self.latest_ref = None

    @torch.no_grad()
    def embed_probe(self, model):
        was = model.training
        model.eval()
        feats = torch.cat([model.features(chunk) for chunk in self.probe_x.split(512)])
        model.train(was)
        return feats.double()  # MMD estimates are differences of near-equal means

    def on_validation_end(self, trainer, step, metrics):
        ref = self.embed_probe(trainer.model)
        self.latest_ref = step
        trainer.add_callback("on_train_step_end",
                             functools.partial(self.track, reference=ref, ref_step=step))

    def track(self, trainer, step, loss, features, *, reference, ref_step):
        if step % self.every:
            return
        idx = torch.randperm(len(reference))[: self.subset]
        self.drift[ref_step].append((step, rbf_mmd(features.double(), reference[idx])))

    def latest(self):
        filled = [k for k, v in self.drift.items() if v]
        if not filled:
            return float("nan")
        return float(np.mean([d for _, d in self.drift[max(filled)]]))


class ProgressLog:
    def __init__(self, every, drift: RepresentationDrift):
        self.every = every
        self.drift = drift
        self.losses: List[float] = []
        self.t0 = time.perf_counter()

    def on_train_step_end(self, trainer, step, loss, features):
        self.losses.append(loss)
        if (step + 1) % self.every == 0:
            val = trainer.history[-1] if trainer.history else {"val_acc": math.nan}
            log.info("step %4d  loss %.4f  val_acc %.3f  drift(MMD) %.4f  lr %.4f  %.1fs",
                     step + 1, np.mean(self.losses[-self.every:]), val["val_acc"], self.drift.latest(),
                     trainer.scheduler.get_last_lr()[0], time.perf_counter() - self.t0)


@contextlib.contextmanager
def torch_threads(n):
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    cfg = TrainConfig()
    with torch_threads(1):
        trainer = Trainer(cfg)
        drift = RepresentationDrift(trainer.synth, cfg.data.probe_size, cfg.drift_every)
        progress = ProgressLog(cfg.log_every, drift)
        trainer.add_callback("on_validation_end", drift.on_validation_end)
        trainer.add_callback("on_train_step_end", progress.on_train_step_end)
        trainer.fit()
    best = max(trainer.history, key=lambda h: h["val_acc"])
    print(f"best val_acc {best['val_acc']:.3f} at step {best['step']}, final drift {drift.latest():.4f}")


if __name__ == "__main__":
    main()
