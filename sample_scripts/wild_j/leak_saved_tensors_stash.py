# expect: leak
# holder: _stash
# pattern: activation compression via torch.autograd.graph.saved_tensors_hooks: pack() stores a float16 copy of every saved tensor in the HalfPrecisionStash object's list and returns its index; nothing ever drops the entries after backward, so the stash grows by one step's worth of activations (and weight copies) per step
# step_ms: 25
"""Wide MLP classifier trained with half-precision activation storage.

Tensors that autograd saves for the backward pass are packed to float16
through torch.autograd.graph.saved_tensors_hooks, which roughly halves the
activation footprint of the wide layers.  Data is a synthetic 28x28
"stroke digits" set generated on the fly.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(23)

N_STEPS = 600
BATCH = 64
HIDDEN = 256
N_CLASSES = 10
SEED = 23


class HalfPrecisionStash:
    def __init__(self, min_numel=4096):
        self.min_numel = min_numel
        self._stash = []
        self.packed = 0

    def pack(self, t):
        if t.numel() < self.min_numel or t.dtype != torch.float32:
            return ("raw", t)
        self._stash.append(t.detach().to(torch.float16))
        self.packed += 1
        return ("half", len(self._stash) - 1)

    def unpack(self, packed):
        if packed[0] == "raw":
            return packed[1]
        return self._stash[packed[1]].to(torch.float32)

    def scope(self):
        return torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)


class StrokeDigits:
    """Each class is a fixed set of random line segments; samples jitter them."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.templates = self.rng.uniform(4, 24, size=(N_CLASSES, 3, 4))
        yy, xx = np.mgrid[0:28, 0:28]
        self.grid = np.stack([xx.ravel(), yy.ravel()], axis=1).astype(np.float32)

    def batch(self, n):
        labels = self.rng.integers(0, N_CLASSES, size=n)
        segs = self.templates[labels] + self.rng.normal(0, 2.5, size=(n, 3, 4))
        a, b = segs[..., None, :2], segs[..., None, 2:]
        p = self.grid[None, None]
        ab = b - a
        t = np.clip(((p - a) * ab).sum(-1) / ((ab * ab).sum(-1) + 1e-6), 0, 1)
        d = np.linalg.norm(p - (a + t[..., None] * ab), axis=-1).min(axis=1)
        img = np.exp(-(d ** 2) / 2.0) + self.rng.normal(0, 0.3, size=d.shape)
        return torch.from_numpy(img.astype(np.float32)), torch.from_numpy(labels)


def main():
    data = StrokeDigits(SEED)
    model = nn.Sequential(
        nn.Linear(28 * 28, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, N_CLASSES),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    stash = HalfPrecisionStash()

    start = last = time.perf_counter()
    correct = seen = 0
    ema = None
    for step in range(1, N_STEPS + 1):
        x, y = data.batch(BATCH)
        with stash.scope():
            logits = model(x)
            loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()

        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        correct += int((logits.argmax(1) == y).sum())
        seen += BATCH
        now = time.perf_counter()
        if now - last >= 1.0:
            print(
                f"[{now - start:5.1f}s] step {step}/{N_STEPS} loss={ema:.4f} "
                f"acc={correct / seen:.3f} packed={stash.packed}",
                flush=True,
            )
            correct = seen = 0
            last = now

    print(f"done: {N_STEPS} steps in {time.perf_counter() - start:.1f}s, loss {ema:.4f}")


if __name__ == "__main__":
    main()
