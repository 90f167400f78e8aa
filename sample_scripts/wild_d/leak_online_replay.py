# expect: leak
# holder: _seen
# pattern: online learner's partial_fit keeps every incoming mini-batch in self._seen "for replay" and only ever samples from it, so the list grows without bound
# step_ms: 0.8
"""Online (streaming) logistic-regression-style learner with experience replay.

A drifting data stream produces small mini-batches.  ``OnlineLearner.partial_fit``
does one SGD step on the new batch mixed with one randomly chosen older batch
to reduce catastrophic forgetting when the stream drifts.

Why it leaks: every batch is appended to ``self._seen`` and nothing is ever
evicted -- the replay memory is effectively the whole stream.  At ~10 KiB
per batch and tens of thousands of batches the process keeps growing.

Fix: use a bounded reservoir (``collections.deque(maxlen=...)`` or reservoir
sampling with a fixed capacity).
"""
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

N_FEATURES = 40
N_CLASSES = 5
BATCH = 32
N_BATCHES = 16000


class DriftingStream:
    """Gaussian class blobs whose centres slowly rotate over time."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.centres = self.rng.normal(scale=0.25, size=(N_CLASSES, N_FEATURES)).astype(np.float32)
        self.drift = self.rng.normal(scale=3e-4, size=(N_CLASSES, N_FEATURES)).astype(np.float32)

    def __iter__(self):
        return self

    def __next__(self):
        self.centres += self.drift
        y = self.rng.integers(0, N_CLASSES, size=BATCH)
        X = self.centres[y] + self.rng.normal(size=(BATCH, N_FEATURES)).astype(np.float32)
        return X, y


class OnlineLearner:
    def __init__(self, n_features, n_classes, lr=0.05, replay_prob=0.5, seed=0):
        self.model = nn.Sequential(nn.Linear(n_features, 64), nn.Tanh(), nn.Linear(64, n_classes))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        self.replay_prob = replay_prob
        self._rng = random.Random(seed)
        self._seen = []
        self.n_updates = 0

    def partial_fit(self, X, y):
        X = torch.from_numpy(X)
        y = torch.from_numpy(y)
        self._seen.append((X, y))
        if len(self._seen) > 1 and self._rng.random() < self.replay_prob:
            Xr, yr = self._seen[self._rng.randrange(len(self._seen) - 1)]
            X = torch.cat([X, Xr])
            y = torch.cat([y, yr])
        loss = F.cross_entropy(self.model(X), y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.n_updates += 1
        return loss.item()

    @torch.no_grad()
    def score(self, X, y):
        pred = self.model(torch.from_numpy(X)).argmax(1).numpy()
        return float((pred == y).mean())


def main():
    stream = DriftingStream(seed=42)
    learner = OnlineLearner(N_FEATURES, N_CLASSES)
    ema_loss, ema_acc = None, None
    t0 = time.time()
    for i, (X, y) in zip(range(N_BATCHES), stream):
        # prequential evaluation: test on the batch before training on it
        acc = learner.score(X, y)
        loss = learner.partial_fit(X, y)
        ema_loss = loss if ema_loss is None else 0.99 * ema_loss + 0.01 * loss
        ema_acc = acc if ema_acc is None else 0.99 * ema_acc + 0.01 * acc
        if (i + 1) % 4000 == 0:
            print(f"[{time.time() - t0:5.1f}s] batch {i + 1:6d}  loss={ema_loss:.3f}  "
                  f"preq_acc={ema_acc:.3f}")
    print(f"updates: {learner.n_updates}")


if __name__ == "__main__":
    main()
