# expect: leak
# holder: _queue|prefetcher
# pattern: a BackgroundPrefetcher thread synthesises and augments uint8 image batches into self._queue = queue.Queue(maxsize=0) (the "0" was meant as "auto" but means unbounded); the producer runs faster than the CNN training step that consumes one batch per step, so the backlog held by prefetcher._queue grows for the whole run (torch.optim.Adam)
# step_ms: 43
"""Online training on procedurally generated images with a background prefetcher.

Generating and augmenting the images is done in a producer thread so the
main thread only has to convert and train.  ``prefetch_depth=0`` was
passed on the assumption that 0 means "let the queue size itself"; for
``queue.Queue`` it means no limit, so ``put`` never blocks and the
producer is never throttled.  The producer also releases the GIL for most
of its work (numpy), so it keeps well ahead of the consumer.
"""
import queue
import threading
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

IMG = 32
BATCH = 32
NUM_CLASSES = 4
TRAIN_STEPS = 450


def render_batch(rng):
    """Images of oriented stripes; label = orientation bucket."""
    labels = rng.integers(0, NUM_CLASSES, size=BATCH)
    yy, xx = np.mgrid[0:IMG, 0:IMG].astype(np.float32)
    theta = labels * (np.pi / NUM_CLASSES) + rng.normal(0, 0.1, size=BATCH)
    freq = rng.uniform(0.3, 0.8, size=BATCH)
    phase = rng.uniform(0, 2 * np.pi, size=BATCH)
    proj = (np.cos(theta)[:, None, None] * xx + np.sin(theta)[:, None, None] * yy)
    stripes = np.sin(freq[:, None, None] * proj + phase[:, None, None])
    imgs = np.empty((BATCH, 3, IMG, IMG), dtype=np.uint8)
    for c in range(3):
        noise = rng.normal(0, 0.3, size=(BATCH, IMG, IMG))
        imgs[:, c] = np.clip((stripes * 0.5 + 0.5 + noise) * 255, 0, 255).astype(np.uint8)
    flip = rng.random(BATCH) < 0.5
    imgs[flip] = imgs[flip][..., ::-1]
    return imgs, labels.astype(np.int64)


class BackgroundPrefetcher:
    def __init__(self, seed=0, prefetch_depth=0):
        self._queue = queue.Queue(maxsize=prefetch_depth)
        self._stop = threading.Event()
        self._rng = np.random.default_rng(seed)
        self.produced = 0
        self._thread = threading.Thread(target=self._worker, name="prefetch", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _worker(self):
        while not self._stop.is_set():
            imgs, labels = render_batch(self._rng)
            self._queue.put((self.produced, imgs, labels))
            self.produced += 1
            time.sleep(0.01)  # be nice to the trainer

    def next(self):
        return self._queue.get()

    def backlog(self):
        return self._queue.qsize()

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)


class StripeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
        )
        self.head = nn.Linear(64, NUM_CLASSES)

    def forward(self, x):
        return self.head(self.body(x).mean(dim=(2, 3)))


def main():
    model = StripeNet()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    prefetcher = BackgroundPrefetcher(seed=0).start()
    t0 = time.time()
    ema = None
    try:
        for step in range(TRAIN_STEPS):
            _, imgs, labels = prefetcher.next()
            x = torch.from_numpy(imgs).float().div_(255).sub_(0.5).div_(0.25)
            y = torch.from_numpy(labels)
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
            if step % 50 == 0 or step == TRAIN_STEPS - 1:
                print(f"step {step:4d} loss {ema:.3f} produced {prefetcher.produced} "
                      f"backlog {prefetcher.backlog()} ({time.time() - t0:.1f}s)")
    finally:
        prefetcher.stop()


if __name__ == "__main__":
    main()
