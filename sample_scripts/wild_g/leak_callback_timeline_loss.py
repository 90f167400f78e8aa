# expect: leak
# holder: events|timeline|callbacks
# pattern: Keras-style trainer with a list of callbacks (LR-range finder, StepTimeline profiler); StepTimeline.on_batch_end appends (step, perf_counter, loss) to self.events, where loss is the live graph-attached tensor, so every step's autograd graph stays reachable via trainer.callbacks[i].events (small transformer, torch.optim.AdamW)
# step_ms: 35
"""Small transformer text classifier trained with a callback-driven loop.

The trainer calls ``on_train_begin`` / ``on_batch_end`` / ``on_epoch_end``
on every registered callback, passing a ``logs`` dict.  An ``LRRangeFinder``
sweeps the learning rate exponentially during the first epoch (fast.ai
style) and then settles on a value; ``StepTimeline`` records a timeline of
(step, wall time, loss) for a profiler-like report at the end.  The
timeline stores ``logs["loss"]`` as given, i.e. the loss tensor itself.
"""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

VOCAB = 2000
SEQ = 32
D_MODEL = 64
NUM_CLASSES = 6
BATCH = 16
STEPS_PER_EPOCH = 120
EPOCHS = 5


class Callback:
    def on_train_begin(self, trainer): pass
    def on_batch_end(self, trainer, step, logs): pass
    def on_epoch_end(self, trainer, epoch, logs): pass
    def on_train_end(self, trainer): pass


class LRRangeFinder(Callback):
    """Exponential LR sweep during the first epoch, then pick lr at min smoothed loss / 10."""

    def __init__(self, lr_min=1e-5, lr_max=1e-1, beta=0.9):
        self.lr_min, self.lr_max, self.beta = lr_min, lr_max, beta
        self.avg = 0.0
        self.best = math.inf
        self.best_lr = None
        self.done = False

    def _set_lr(self, trainer, lr):
        for g in trainer.optimizer.param_groups:
            g["lr"] = lr

    def on_train_begin(self, trainer):
        self._set_lr(trainer, self.lr_min)

    def on_batch_end(self, trainer, step, logs):
        if self.done:
            return
        frac = step / STEPS_PER_EPOCH
        lr = self.lr_min * (self.lr_max / self.lr_min) ** frac
        self.avg = self.beta * self.avg + (1 - self.beta) * logs["loss"].item()
        smoothed = self.avg / (1 - self.beta ** (step + 1))
        if smoothed < self.best:
            self.best, self.best_lr = smoothed, lr
        self._set_lr(trainer, lr)

    def on_epoch_end(self, trainer, epoch, logs):
        if not self.done:
            self.done = True
            chosen = (self.best_lr or 1e-3) / 10
            self._set_lr(trainer, chosen)
            print(f"  lr finder: best smoothed loss {self.best:.3f} -> lr {chosen:.2e}")


class StepTimeline(Callback):
    """Profiler-like timeline of training steps."""

    def __init__(self):
        self.events = []
        self.t0 = None

    def on_train_begin(self, trainer):
        self.t0 = time.perf_counter()

    def on_batch_end(self, trainer, step, logs):
        self.events.append((step, time.perf_counter() - self.t0, logs["loss"]))

    def on_train_end(self, trainer):
        times = [t for _, t, _ in self.events]
        gaps = [b - a for a, b in zip(times, times[1:])]
        if gaps:
            gaps.sort()
            print(f"  timeline: {len(self.events)} steps, median {1000 * gaps[len(gaps) // 2]:.1f} ms, "
                  f"p95 {1000 * gaps[int(0.95 * len(gaps))]:.1f} ms")


class TextClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Parameter(torch.zeros(1, SEQ, D_MODEL))
        layer = nn.TransformerEncoderLayer(D_MODEL, 4, 4 * D_MODEL, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=3)
        self.norm = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, NUM_CLASSES)

    def forward(self, tokens):
        h = self.encoder(self.emb(tokens) + self.pos)
        return self.head(self.norm(h.mean(dim=1)))


def synthetic_batch(gen):
    """Class = which of NUM_CLASSES 'keyword' ranges dominates the sequence."""
    y = torch.randint(0, NUM_CLASSES, (BATCH,), generator=gen)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)
    keyword = (y * 50).unsqueeze(1) + torch.randint(0, 50, (BATCH, SEQ), generator=gen)
    mask = torch.rand(BATCH, SEQ, generator=gen) < 0.3
    return torch.where(mask, keyword, tokens), y


class Trainer:
    def __init__(self, model, optimizer, callbacks):
        self.model = model
        self.optimizer = optimizer
        self.callbacks = list(callbacks)

    def _fire(self, name, *args):
        for cb in self.callbacks:
            getattr(cb, name)(self, *args)

    def fit(self, epochs):
        gen = torch.Generator().manual_seed(1)
        self._fire("on_train_begin")
        step = 0
        for epoch in range(epochs):
            self.model.train()
            total, correct, n = 0.0, 0, 0
            for i in range(STEPS_PER_EPOCH):
                x, y = synthetic_batch(gen)
                logits = self.model(x)
                loss = F.cross_entropy(logits, y)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                self.optimizer.step()
                self._fire("on_batch_end", step, {"loss": loss, "batch": i})
                total += loss.item()
                correct += (logits.argmax(1) == y).sum().item()
                n += y.numel()
                step += 1
            logs = {"loss": total / STEPS_PER_EPOCH, "acc": correct / n}
            print(f"epoch {epoch}: loss {logs['loss']:.3f} acc {logs['acc']:.3f}")
            self._fire("on_epoch_end", epoch, logs)
        self._fire("on_train_end")


def main():
    model = TextClassifier()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    trainer = Trainer(model, opt, [LRRangeFinder(), StepTimeline()])
    t0 = time.time()
    trainer.fit(EPOCHS)
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
