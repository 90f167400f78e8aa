# expect: leak
# holder: bank
# pattern: MoCo-style contrastive loop keeps its negatives queue as `bank = bank + [keys]` and reads `negatives = bank[-QUEUE_BATCHES:]`; the slice is bounded but `bank` itself is never truncated, so detached key batches pile up (torch.optim.SGD)
# step_ms: 45
"""Momentum-contrast (MoCo v2-lite) pre-training on synthetic image patches.

A query encoder is trained with InfoNCE against a momentum ("key") encoder.
Negatives come from a FIFO queue of the key embeddings of the last
``QUEUE_BATCHES`` batches, exactly like MoCo's 65k-entry queue but smaller.

Why it leaks: the queue is kept as a Python list of detached key batches.
Each step does ``bank = bank + [k]`` and then takes
``negatives = bank[-QUEUE_BATCHES:]`` -- the author intended the slice to be
the new queue, but it is assigned to another name, so ``bank`` keeps every
key batch ever computed (BATCH x DIM float32 = 256 KiB per step).

Fix: ``bank = bank[-QUEUE_BATCHES:]`` (or a ``deque(maxlen=...)``, or a
preallocated ring-buffer tensor as in the MoCo reference code).
"""
import copy
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

BATCH = 256
DIM = 256
QUEUE_BATCHES = 16          # 16 * 256 = 4096 negatives
TEMPERATURE = 0.2
MOMENTUM = 0.99
STEPS = 340
IMG = 16


class Encoder(nn.Module):
    def __init__(self, dim=DIM):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Flatten(),
            nn.Linear(3 * IMG * IMG, 512), nn.BatchNorm1d(512), nn.ReLU(),
            nn.Linear(512, 256), nn.BatchNorm1d(256), nn.ReLU(),
        )
        self.head = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, dim))

    def forward(self, x):
        return F.normalize(self.head(self.backbone(x)), dim=1)


def sample_batch(g):
    """Unlabelled 'images': random low-frequency colour patterns plus texture."""
    coarse = torch.randn(BATCH, 3, 4, 4, generator=g)
    x = F.interpolate(coarse, size=(IMG, IMG), mode="bilinear", align_corners=False)
    return x + 0.3 * torch.randn(BATCH, 3, IMG, IMG, generator=g)


def augment(x, g):
    # random shift, horizontal flip, colour jitter, gaussian noise
    dx, dy = torch.randint(-3, 4, (2,), generator=g).tolist()
    x = torch.roll(x, shifts=(dx, dy), dims=(2, 3))
    flip = torch.rand(x.shape[0], generator=g) < 0.5
    x = torch.where(flip[:, None, None, None], x.flip(3), x)
    scale = 1 + 0.3 * (torch.rand(x.shape[0], 3, 1, 1, generator=g) - 0.5)
    x = x * scale + 0.1 * torch.randn(x.shape, generator=g)
    return x


@torch.no_grad()
def momentum_update(q_enc, k_enc, m):
    for pq, pk in zip(q_enc.parameters(), k_enc.parameters()):
        pk.mul_(m).add_(pq.detach(), alpha=1 - m)


def main():
    g = torch.Generator().manual_seed(0)
    q_enc = Encoder()
    k_enc = copy.deepcopy(q_enc)
    for p in k_enc.parameters():
        p.requires_grad_(False)

    opt = torch.optim.SGD(q_enc.parameters(), lr=0.03, momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / STEPS)))

    bank = []                     # list of detached key batches (the "queue")
    t0 = time.time()
    for step in range(STEPS):
        x = sample_batch(g)
        xq, xk = augment(x, g), augment(x, g)

        q = q_enc(xq)
        with torch.no_grad():
            momentum_update(q_enc, k_enc, MOMENTUM)
            k = k_enc(xk)

        if bank:
            negatives = torch.cat(bank[-QUEUE_BATCHES:], dim=0)
            l_neg = q @ negatives.T
        else:
            l_neg = q.new_zeros(BATCH, 0)
        l_pos = (q * k).sum(dim=1, keepdim=True)
        logits = torch.cat([l_pos, l_neg], dim=1) / TEMPERATURE
        labels = torch.zeros(BATCH, dtype=torch.long)
        loss = F.cross_entropy(logits, labels)

        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()

        # enqueue the newest keys, dequeue the oldest
        bank = bank + [k.detach()]
        recent = bank[-QUEUE_BATCHES:]

        if step % 50 == 0:
            acc = (logits.argmax(dim=1) == 0).float().mean().item()
            print(f"step {step:4d}  loss {loss.item():.3f}  top1 {acc:.2f}  "
                  f"queue {sum(len(t) for t in recent)}  lr {sched.get_last_lr()[0]:.4f}  "
                  f"{time.time() - t0:.1f}s", flush=True)

    print("done", f"{time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
