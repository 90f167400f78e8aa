# expect: leak
# holder: CrossBatchMemory.feats|memory.feats|xbm.feats|feats.grad_fn|feats
# pattern: product-image metric learning (small CNN embedder, multi-similarity loss, torch.optim.AdamW, ~25 ms steps, code in main() + XBMTrainer/CrossBatchMemory classes) with a cross-batch memory (XBM) ring buffer preallocated once as torch.zeros(size, dim) and filled in place with `self.feats[idx] = keys`; keys come from a momentum (EMA) key encoder made with copy.deepcopy(encoder), which keeps requires_grad=True, and its forward is not wrapped in torch.no_grad(); the read side (CrossBatchMemory.get, decorated @torch.no_grad) hides the problem, but each in-place write turns the buffer into a non-leaf whose CopySlices grad_fn links to the previous write's CopySlices and to that step's key-encoder graph, so the never-backpropagated saved activations of every step's key forward stay reachable from memory.feats.grad_fn, although the tensor itself has a fixed size
# step_ms: 25
"""Metric learning for near-duplicate product images with an XBM memory.

Query embeddings come from the online encoder, keys for the cross-batch
memory from a slowly moving EMA copy of it (as in MoCo / XBM papers), which
keeps the memory consistent across thousands of steps.
"""
import copy
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

N_CLASSES = 300
IMG = 28
PRODUCTS_PER_BATCH = 12
VIEWS_PER_PRODUCT = 8
THUMB = 16  # catalogue studio shots are stored as small thumbnails
EMB = 64
MEM_SIZE = 4096
STEPS = 560


def make_catalogue(rng):
    """Every product is a colour blob layout; views differ by shift, scale and noise."""
    yy, xx = np.mgrid[0:IMG, 0:IMG].astype(np.float32) / IMG
    protos = np.zeros((N_CLASSES, 3, IMG, IMG), dtype=np.float32)
    for c in range(N_CLASSES):
        for _ in range(3):
            cx, cy = rng.uniform(0.2, 0.8, 2)
            s = rng.uniform(0.06, 0.2)
            col = rng.uniform(0, 1, 3).astype(np.float32)
            blob = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * s * s))
            protos[c] += col[:, None, None] * blob
    return protos


def sample_views(protos, labels, rng):
    x = protos[labels].copy()
    for i in range(len(labels)):
        dx, dy = rng.integers(-3, 4, 2)
        x[i] = np.roll(x[i], (dy, dx), axis=(1, 2))
    x *= rng.uniform(0.7, 1.3, (len(labels), 3, 1, 1)).astype(np.float32)
    x += rng.normal(0, 0.08, x.shape).astype(np.float32)
    return torch.from_numpy(x)


class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 24, 3, stride=2, padding=1), nn.BatchNorm2d(24), nn.ReLU(),
            nn.Conv2d(24, 48, 3, stride=2, padding=1), nn.BatchNorm2d(48), nn.ReLU(),
            nn.Conv2d(48, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.head = nn.Linear(64, EMB)

    def forward(self, x):
        return F.normalize(self.head(self.body(x)), dim=1)


class CrossBatchMemory:
    def __init__(self, size, dim):
        self.feats = torch.zeros(size, dim)
        self.labels = torch.full((size,), -1, dtype=torch.long)
        self.ptr = 0
        self.filled = 0
        self.size = size

    def enqueue(self, keys, labels):
        n = keys.shape[0]
        idx = (self.ptr + torch.arange(n)) % self.size
        self.feats[idx] = keys
        self.labels[idx] = labels
        self.ptr = (self.ptr + n) % self.size
        self.filled = min(self.size, self.filled + n)

    @torch.no_grad()
    def get(self):
        n = self.filled
        return self.feats[:n], self.labels[:n]


def multi_similarity_loss(q, q_lab, mem, mem_lab, alpha=2.0, beta=40.0, base=0.5):
    sim = q @ mem.T
    pos = q_lab[:, None] == mem_lab[None, :]
    neg = ~pos
    pos_term = torch.log1p((torch.exp(-alpha * (sim - base)) * pos).sum(1)) / alpha
    neg_term = torch.log1p((torch.exp(beta * (sim - base)) * neg).sum(1)) / beta
    return (pos_term + neg_term).mean()


class XBMTrainer:
    def __init__(self, momentum=0.995):
        self.encoder = Embedder()
        self.key_encoder = copy.deepcopy(self.encoder)
        self.memory = CrossBatchMemory(MEM_SIZE, EMB)
        self.opt = torch.optim.AdamW(self.encoder.parameters(), lr=1e-3, weight_decay=1e-4)
        self.m = momentum

    @torch.no_grad()
    def _momentum_update(self):
        for pk, pq in zip(self.key_encoder.parameters(), self.encoder.parameters()):
            pk.mul_(self.m).add_(pq, alpha=1 - self.m)

    def step(self, x_views, y_views, x_catalogue, y_products):
        """x_views: K user photos per product; x_catalogue: one studio shot per product."""
        q = self.encoder(x_views)
        keys = self.key_encoder(x_catalogue)
        loss = multi_similarity_loss(q, y_views, q, y_views)
        mem_f, mem_l = self.memory.get()
        if mem_f.shape[0] > 0:
            loss = loss + multi_similarity_loss(q, y_views, mem_f, mem_l)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self._momentum_update()
        self.memory.enqueue(keys, y_products)
        return loss.item()


@torch.no_grad()
def recall_at_1(encoder, protos, rng):
    encoder.eval()
    labels = rng.choice(N_CLASSES, 200, replace=False)
    gallery = encoder(sample_views(protos, labels, rng))
    queries = encoder(sample_views(protos, labels, rng))
    hit = (queries @ gallery.T).argmax(1) == torch.arange(len(labels))
    encoder.train()
    return hit.float().mean().item()


def main():
    rng = np.random.default_rng(7)
    torch.manual_seed(7)
    protos = make_catalogue(rng)
    trainer = XBMTrainer()
    t0 = time.perf_counter()
    last = t0
    ema_loss = None
    for step in range(1, STEPS + 1):
        products = rng.choice(N_CLASSES, PRODUCTS_PER_BATCH, replace=False)
        views = products.repeat(VIEWS_PER_PRODUCT)
        studio = F.interpolate(torch.from_numpy(protos[products]), size=(THUMB, THUMB),
                               mode="bilinear", align_corners=False)
        loss = trainer.step(sample_views(protos, views, rng), torch.from_numpy(views),
                            studio, torch.from_numpy(products))
        ema_loss = loss if ema_loss is None else 0.95 * ema_loss + 0.05 * loss
        if not math.isfinite(loss):
            raise RuntimeError("loss diverged")
        if time.perf_counter() - last > 2.0:
            r1 = recall_at_1(trainer.encoder, protos, rng)
            print(f"step {step:4d}  loss {ema_loss:.4f}  R@1 {r1:.3f}  mem {trainer.memory.filled}")
            last = time.perf_counter()
    print(f"finished {STEPS} steps in {time.perf_counter() - t0:.1f}s, "
          f"final R@1 {recall_at_1(trainer.encoder, protos, rng):.3f}")


if __name__ == "__main__":
    main()
