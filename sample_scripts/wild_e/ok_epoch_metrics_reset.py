# expect: no_leak
# holder:
# pattern: Trainer logs a dict of detached per-batch tensors (per-sample losses, predictions, targets) every step into self.epoch_records, but reset_epoch_metrics() replaces the list at the start of every epoch; only per-epoch floats go into self.history (bounded sawtooth)
# step_ms: 20
"""1-D CNN for time-series classification with per-epoch metrics (macro-F1, confusion).

``Trainer.train_step`` appends ``{"loss": per_sample_loss, "pred": ..., "target": ...}``
(all detached tensors) to ``self.epoch_records``.  ``end_epoch()`` concatenates
them to compute macro-F1, a confusion matrix and the hardest classes, stores
a few floats in ``self.history`` and the next ``start_epoch()`` calls
``reset_epoch_metrics()``, which rebinds ``self.epoch_records`` to a new list
(and the confusion matrix to zeros).

Why it is fine: the records of one epoch (~130 small dicts) are dropped when
the next epoch starts, so memory rises a little during each epoch and falls
back -- a bounded sawtooth.  ``history`` grows by a handful of floats per epoch.
"""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

N_CLASSES = 6
LENGTH = 128
CHANNELS = 3
BATCH = 64
STEPS_PER_EPOCH = 130
EPOCHS = 6


def synthetic_series(g, n):
    """Class = (waveform shape, dominant channel) with jittered frequency and noise."""
    y = torch.randint(0, N_CLASSES, (n,), generator=g)
    t = torch.linspace(0, 1, LENGTH)
    freq = 3 + 2 * torch.rand(n, 1, generator=g)
    phase = 2 * math.pi * torch.rand(n, 1, generator=g)
    s = torch.sin(2 * math.pi * freq * t + phase)
    shape = y % 3
    wave = torch.where(shape[:, None] == 0, s, torch.where(shape[:, None] == 1, torch.sign(s), s ** 3))
    x = 0.8 * torch.randn(n, CHANNELS, LENGTH, generator=g)
    dominant = (y // 3)[:, None].expand(-1, LENGTH)
    x.scatter_add_(1, dominant[:, None, :], wave[:, None, :])
    return x, y


class TSNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(CHANNELS, 32, 7, padding=3), nn.BatchNorm1d(32), nn.ReLU(),
            nn.Conv1d(32, 64, 5, padding=2, stride=2), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Conv1d(64, 64, 5, padding=2, stride=2), nn.BatchNorm1d(64), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Dropout(0.1), nn.Linear(64, N_CLASSES),
        )

    def forward(self, x):
        return self.net(x)


class Trainer:
    def __init__(self, model, total_steps):
        self.model = model
        self.opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
        self.sched = torch.optim.lr_scheduler.OneCycleLR(self.opt, max_lr=3e-3, total_steps=total_steps)
        self.history = {"loss": [], "macro_f1": [], "worst_class": []}
        self.reset_epoch_metrics()

    def reset_epoch_metrics(self):
        self.epoch_records = []
        self.confusion = torch.zeros(N_CLASSES, N_CLASSES, dtype=torch.long)

    def start_epoch(self):
        self.model.train()
        self.reset_epoch_metrics()

    def train_step(self, x, y):
        logits = self.model(x)
        per_sample = F.cross_entropy(logits, y, reduction="none")
        loss = per_sample.mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), 2.0)
        self.opt.step()
        self.sched.step()
        self.epoch_records.append({
            "loss": per_sample.detach(),
            "pred": logits.detach().argmax(1),
            "target": y,
            "probs": logits.detach().softmax(1),
        })

    def end_epoch(self):
        loss = torch.cat([r["loss"] for r in self.epoch_records])
        pred = torch.cat([r["pred"] for r in self.epoch_records])
        target = torch.cat([r["target"] for r in self.epoch_records])
        self.confusion.index_put_((target, pred), torch.ones_like(target), accumulate=True)
        tp = self.confusion.diag().float()
        f1 = 2 * tp / (self.confusion.sum(0) + self.confusion.sum(1)).float().clamp_min(1)
        self.history["loss"].append(loss.mean().item())
        self.history["macro_f1"].append(f1.mean().item())
        self.history["worst_class"].append(int(f1.argmin()))
        return self.history["loss"][-1], self.history["macro_f1"][-1]


def main():
    g = torch.Generator().manual_seed(1)
    trainer = Trainer(TSNet(), total_steps=EPOCHS * STEPS_PER_EPOCH)
    t0 = time.time()
    for epoch in range(EPOCHS):
        trainer.start_epoch()
        for _ in range(STEPS_PER_EPOCH):
            x, y = synthetic_series(g, BATCH)
            trainer.train_step(x, y)
        loss, f1 = trainer.end_epoch()
        print(f"epoch {epoch}  loss {loss:.4f}  macro-F1 {f1:.3f}  worst class {trainer.history['worst_class'][-1]}  "
              f"{time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
