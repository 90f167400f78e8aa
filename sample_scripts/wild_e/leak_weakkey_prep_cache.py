# expect: leak
# holder: _prepared|Preprocessor
# pattern: evaluation pipeline (no optimizer, inference_mode) memoises preprocessing in a weakref.WeakKeyDictionary keyed by the batch object, but the cached value keeps a back-reference to that batch (prepared.source), so the "weak" cache holds every batch strongly
# step_ms: 15
"""Batch evaluation of an image classifier with test-time augmentation (TTA).

(The checkpoint is not shipped with the example, so the CNN is randomly
initialised; accuracy and ECE are just there to make the loop complete.)

``EvalBatch`` objects (raw uint8 images + ids + labels) come from a reader.
``Preprocessor.prepare(batch)`` converts them to normalised float tensors
and memoises the result in a ``weakref.WeakKeyDictionary`` keyed by the batch,
because the TTA loop and the calibration metrics both call ``prepare`` on the
same batch and the author wanted the entry to vanish "automatically" once the
batch is dropped.

Why it leaks: ``Prepared`` keeps ``source=batch`` (handy to get ids/labels
back).  A WeakKeyDictionary holds its *values* strongly, and the value holds
the key strongly, so the key is never collected and the entry never goes
away.  Every batch ever evaluated -- the raw uint8 images and the normalised
float copy -- stays in ``preprocessor._prepared``.

Fix: don't reference the key from the value (store ids/labels instead), or
keep the cache on the batch object itself, or simply not cache across calls.
"""
import time
import weakref
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(0)

IMG = 32
BATCH = 16
N_BATCHES = 1000
N_CLASSES = 8
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


@dataclass(eq=False)
class EvalBatch:
    ids: list
    images: np.ndarray  # (N, H, W, 3) uint8
    labels: np.ndarray


@dataclass
class Prepared:
    source: EvalBatch
    pixels: torch.Tensor


class Preprocessor:
    def __init__(self):
        self._prepared = weakref.WeakKeyDictionary()
        self.hits = 0

    def prepare(self, batch):
        cached = self._prepared.get(batch)
        if cached is not None:
            self.hits += 1
            return cached
        x = torch.from_numpy(batch.images).permute(0, 3, 1, 2).float().div_(255)
        x = (x - MEAN) / STD
        prepared = Prepared(source=batch, pixels=x)
        self._prepared[batch] = prepared
        return prepared


def batch_reader(n_batches, seed):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:IMG, 0:IMG]
    for b in range(n_batches):
        labels = rng.integers(0, N_CLASSES, BATCH)
        angle = labels[:, None, None] * np.pi / N_CLASSES
        stripes = np.sin(0.5 * (xx * np.cos(angle) + yy * np.sin(angle)))
        imgs = 127 + 60 * stripes[..., None] + rng.normal(0, 40, (BATCH, IMG, IMG, 3))
        yield EvalBatch(ids=[f"img_{b:05d}_{i:02d}" for i in range(BATCH)],
                        images=np.clip(imgs, 0, 255).astype(np.uint8), labels=labels)


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 24, 3, padding=1), nn.BatchNorm2d(24), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(24, 48, 3, padding=1), nn.BatchNorm2d(48), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(48, 96, 3, padding=1), nn.BatchNorm2d(96), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(96, N_CLASSES),
    ).eval()


def expected_calibration_error(conf, correct, n_bins=10):
    bins = np.linspace(0, 1, n_bins + 1)
    ece = 0.0
    for lo, hi in zip(bins[:-1], bins[1:]):
        m = (conf > lo) & (conf <= hi)
        if m.any():
            ece += m.mean() * abs(conf[m].mean() - correct[m].mean())
    return ece


def main():
    model = make_model()
    prep = Preprocessor()
    confs, corrects = [], []
    t0 = time.time()
    with torch.inference_mode():
        for i, batch in enumerate(batch_reader(N_BATCHES, seed=1)):
            p = prep.prepare(batch)
            probs = 0.5 * (model(p.pixels).softmax(1) + model(torch.flip(p.pixels, dims=[3])).softmax(1))
            # second consumer of the same batch (hits the cache)
            labels = torch.from_numpy(prep.prepare(batch).source.labels)
            conf, pred = probs.max(1)
            confs.append(conf.numpy().astype(np.float16))
            corrects.append((pred == labels).numpy())
            if (i + 1) % 100 == 0:
                c, k = np.concatenate(confs).astype(np.float32), np.concatenate(corrects)
                print(f"batch {i + 1:4d}  acc {k.mean():.3f}  ECE {expected_calibration_error(c, k):.3f}  "
                      f"cache hits {prep.hits}  {(time.time() - t0) * 1000 / (i + 1):.1f} ms/batch", flush=True)


if __name__ == "__main__":
    main()
