# expect: leak
# holder: _callbacks|trainer._callbacks|callbacks
# pattern: each training step registers a lambda (capturing the batch, logits and loss) as an on_epoch_end callback; the callback list is run every epoch but never cleared
# step_ms: 10
"""Stroke-image classifier with a minimal callback-driven Trainer.

training_step() defers the 'hardest example' bookkeeping to the end of the epoch
by registering a lambda in `self._callbacks["on_epoch_end"]`.  The lambdas close
over the step's input batch, its logits and its loss tensor.  fire() runs the
callbacks but never empties the list, so every closure (and the ~100 KB of
tensors it captured) lives until the process exits, and the epoch-end hook
gets slower every epoch.
Fix: compute the statistic immediately with floats, or clear the list in fire().
"""
import time
from collections import defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F


def synthetic_strokes(n, size=28, n_classes=10, g=None):
    """Images made of a class-specific oriented bar plus noise."""
    y = torch.randint(0, n_classes, (n,), generator=g)
    coords = torch.linspace(-1, 1, size)
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")
    angle = (y.float() / n_classes * torch.pi).view(-1, 1, 1)
    dist = (xx * torch.sin(angle) - yy * torch.cos(angle)).abs()
    img = torch.exp(-(dist / 0.15) ** 2)
    img = img + 0.25 * torch.randn(img.shape, generator=g)
    return img.unsqueeze(1), y


class Trainer:
    def __init__(self, model, optimizer, epochs, steps_per_epoch, batch_size):
        self.model = model
        self.optimizer = optimizer
        self.epochs = epochs
        self.steps_per_epoch = steps_per_epoch
        self.batch_size = batch_size
        self._callbacks = defaultdict(list)
        self.hardest = (0.0, -1)
        self.g = torch.Generator().manual_seed(0)

    def on(self, event, fn):
        self._callbacks[event].append(fn)

    def fire(self, event):
        for fn in self._callbacks[event]:
            fn()

    def _track_hardest(self, step, batch, logits, loss):
        x, y = batch
        per_example = F.cross_entropy(logits.detach(), y, reduction="none")
        worst = per_example.max().item()
        if worst > self.hardest[0]:
            self.hardest = (worst, step)

    def training_step(self, step, batch):
        x, y = batch
        logits = self.model(x)
        loss = F.cross_entropy(logits, y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.on("on_epoch_end", lambda: self._track_hardest(step, batch, logits, loss))
        return loss

    def fit(self):
        t0 = time.time()
        step = 0
        for epoch in range(self.epochs):
            self.model.train()
            total = 0.0
            for _ in range(self.steps_per_epoch):
                batch = synthetic_strokes(self.batch_size, g=self.g)
                total += self.training_step(step, batch).item()
                step += 1
            self.hardest = (0.0, -1)
            self.fire("on_epoch_end")
            print(f"epoch {epoch}  loss {total / self.steps_per_epoch:.4f}  hardest "
                  f"{self.hardest[0]:.2f}@{self.hardest[1]}  ({time.time() - t0:.1f}s)", flush=True)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 32, 5, stride=2, padding=2), nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=1, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    Trainer(model, opt, epochs=8, steps_per_epoch=180, batch_size=24).fit()


if __name__ == "__main__":
    main()
