# expect: leak
# holder: _free|POOL
# pattern: PaddedBatch and its Segment views form a reference cycle, and PaddedBatch.__del__ (run by the cyclic GC) hands self.x back to a module-level BufferPool; get() looks buffers up by the rounded-up shape (B, Lp, D) but __del__ returns the trimmed view of shape (B, L, D), so almost nothing is ever reused and POOL._free keeps one ~100 KB base array per batch forever
# step_ms: 60
"""Variable-length sequence classifier with recycled padding buffers.

Sequences (synthetic accelerometer snippets, 16 channels) are padded into
(B, L, D) batches.  Allocating a fresh padded array for every batch showed
up in a profile, so padded buffers come from a small pool keyed by shape
(lengths are rounded up to a multiple of 16 so shapes repeat) and go back
to the pool when the batch object dies.  Each batch also exposes
per-example ``Segment`` views that the augmentation code uses.

The model is a 1-layer GRU with a linear head over the last valid step.
"""
import time
from collections import defaultdict

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

torch.set_num_threads(1)
torch.manual_seed(0)

D = 16
B = 16
N_CLASSES = 6
N_STEPS = 300


class BufferPool:
    def __init__(self):
        self._free = defaultdict(list)
        self.allocs = 0
        self.reuses = 0

    def get(self, shape):
        bucket = self._free.get(shape)
        if bucket:
            self.reuses += 1
            return bucket.pop()
        self.allocs += 1
        return np.zeros(shape, dtype=np.float32)

    def put(self, arr):
        self._free[arr.shape].append(arr)


POOL = BufferPool()


class Segment:
    def __init__(self, batch, row):
        self.batch = batch
        self.row = row

    @property
    def length(self):
        return int(self.batch.lengths[self.row])

    @property
    def values(self):
        return self.batch.x[self.row, :self.length]

    def jitter_(self, rng, scale=0.02):
        v = self.values
        v += scale * rng.standard_normal(v.shape).astype(np.float32)


class PaddedBatch:
    def __init__(self, seqs, labels):
        lengths = np.array([len(s) for s in seqs])
        L = int(lengths.max())
        Lp = (L + 15) // 16 * 16
        buf = POOL.get((len(seqs), Lp, D))
        buf.fill(0.0)
        for i, s in enumerate(seqs):
            buf[i, :len(s)] = s
        self.x = buf[:, :L]  # no need to carry padding past the longest sequence
        self.lengths = lengths
        self.labels = np.asarray(labels)
        self.segments = [Segment(self, i) for i in range(len(seqs))]

    def __del__(self):
        POOL.put(self.x)


def make_sequence(rng, label):
    n = int(rng.integers(40, 200))
    t = np.arange(n, dtype=np.float32)[:, None]
    freq = 0.03 + 0.02 * label
    base = np.sin(freq * t * (1 + 0.1 * np.arange(D)))
    return (base + 0.5 * rng.standard_normal((n, D))).astype(np.float32)


class GRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(D, 48, batch_first=True)
        self.head = nn.Linear(48, N_CLASSES)

    def forward(self, x, lengths):
        out, _ = self.gru(x)
        last = out[torch.arange(x.shape[0]), lengths - 1]
        return self.head(last)


def main():
    rng = np.random.default_rng(0)
    model = GRUClassifier()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    t0 = time.time()
    last_print = t0
    correct = seen = 0
    for step in range(N_STEPS):
        labels = rng.integers(0, N_CLASSES, B)
        batch = PaddedBatch([make_sequence(rng, int(c)) for c in labels], labels)
        for seg in batch.segments:
            if rng.random() < 0.5:
                seg.jitter_(rng)
        x = torch.from_numpy(np.ascontiguousarray(batch.x))
        lengths = torch.from_numpy(batch.lengths)
        y = torch.from_numpy(batch.labels)
        logits = model(x, lengths)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        correct += (logits.argmax(1) == y).sum().item()
        seen += B
        now = time.time()
        if now - last_print > 1.0:
            last_print = now
            print(f"step {step:4d} loss {loss.item():.3f} acc {correct / seen:.3f} "
                  f"pool allocs {POOL.allocs} reuses {POOL.reuses} ({now - t0:.1f}s)",
                  flush=True)
            correct = seen = 0
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
