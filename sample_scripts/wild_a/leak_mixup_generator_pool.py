# expect: leak
# holder: pool|waveform_batches
# pattern: generator data source keeps every emitted numpy batch in a local list (a 'mixup pool' that was meant to be capped) inside the generator frame
# step_ms: 12
"""1-D CNN keyword-spotting model on synthetic waveforms fed by a numpy generator.

waveform_batches() synthesises a batch of tone-burst 'keywords' and applies a
cross-batch mixup: it blends the new batch with a random earlier batch taken
from `pool`.  The pool was meant to be a small memory bank, but every raw batch
is appended and nothing is dropped, so the generator's frame accumulates
~200 KB of float32 audio per step for as long as training runs.
Fix: `pool = collections.deque(maxlen=64)` (or reservoir-sample into a fixed array).
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SR = 8000


def synth_keywords(rng, n, n_classes, length):
    t = np.arange(length) / SR
    labels = rng.integers(0, n_classes, n)
    base = 300.0 + 120.0 * labels[:, None]
    chirp = base + 400.0 * t[None, :] * (labels[:, None] % 3)
    onset = rng.integers(0, length // 3, n)
    env = np.exp(-((np.arange(length)[None, :] - onset[:, None] - length // 4) / (length / 8)) ** 2)
    wave = np.sin(2 * np.pi * chirp * t[None, :]) * env
    wave += 0.3 * rng.standard_normal((n, length))
    return wave.astype(np.float32), labels


def waveform_batches(batch_size, n_classes, length, seed=0, mix_prob=0.5, alpha=0.3):
    rng = np.random.default_rng(seed)
    pool = []
    while True:
        wave, labels = synth_keywords(rng, batch_size, n_classes, length)
        onehot = np.eye(n_classes, dtype=np.float32)[labels]
        pool.append((wave, onehot))
        if len(pool) > 1 and rng.random() < mix_prob:
            old_wave, old_y = pool[rng.integers(0, len(pool) - 1)]
            lam = rng.beta(alpha, alpha)
            wave = lam * wave + (1 - lam) * old_wave
            onehot = lam * onehot + (1 - lam) * old_y
        yield torch.from_numpy(wave).unsqueeze(1), torch.from_numpy(onehot)


class KWSNet(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, 16, 31, stride=4, padding=15), nn.BatchNorm1d(16), nn.ReLU(),
            nn.Conv1d(16, 32, 15, stride=4, padding=7), nn.BatchNorm1d(32), nn.ReLU(),
            nn.Conv1d(32, 64, 7, stride=2, padding=3), nn.BatchNorm1d(64), nn.ReLU(),
            nn.AdaptiveMaxPool1d(1), nn.Flatten(), nn.Linear(64, n_classes),
        )

    def forward(self, x):
        return self.net(x)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    n_classes, length, batch_size = 12, 3200, 16
    model = KWSNet(n_classes)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    batches = waveform_batches(batch_size, n_classes, length)

    steps = 900
    t0 = time.time()
    running = 0.0
    for step, (x, y_soft) in enumerate(batches, start=1):
        logits = model(x)
        loss = torch.sum(-y_soft * F.log_softmax(logits, dim=1), dim=1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.item()
        if step % 150 == 0:
            print(f"step {step}  loss {running / 150:.4f}  ({time.time() - t0:.1f}s)", flush=True)
            running = 0.0
        if step >= steps:
            break
    print("done")


if __name__ == "__main__":
    main()
