# expect: leak
# holder: hard_examples
# pattern: keeps a tiny view (images[i]) of every batch's hardest example; each view pins the whole batch's storage
# step_ms: 20
"""Small CNN on a synthetic "shapes" image dataset, with hard-example mining
for the end-of-training error-analysis grid.

Every few steps ``HardExampleMiner.update`` stores the single highest-loss
image of the batch: ``self.hard_examples.append((loss, label, images[i]))``.
One 3x32x32 image is only 12 KiB, so keeping a few thousand of them looked
harmless. But ``images[i]`` is a *view*: it shares the storage of the whole
normalised batch tensor, so each entry keeps the entire batch alive
(batch x 3 x 32 x 32 floats). Memory grows ~batch-size times faster than
the author's estimate.

Fix: ``images[i].clone()`` (or ``.numpy().copy()``), and keep only the top-k
with ``heapq`` instead of every batch's worst.
"""

import argparse
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

IMG = 32
N_CLASSES = 4  # circle, square, horizontal bar, vertical bar
MEAN = torch.tensor([0.2, 0.2, 0.2]).view(1, 3, 1, 1)
STD = torch.tensor([0.35, 0.35, 0.35]).view(1, 3, 1, 1)


def render_batch(batch, gen):
    """Random coloured shapes on a noisy background."""
    yy, xx = torch.meshgrid(torch.arange(IMG), torch.arange(IMG), indexing="ij")
    labels = torch.randint(0, N_CLASSES, (batch,), generator=gen)
    cx = torch.randint(8, IMG - 8, (batch, 1, 1), generator=gen)
    cy = torch.randint(8, IMG - 8, (batch, 1, 1), generator=gen)
    r = torch.randint(4, 8, (batch, 1, 1), generator=gen)
    dx, dy = (xx - cx).abs(), (yy - cy).abs()
    masks = torch.stack(
        [
            (dx**2 + dy**2) <= r**2,
            (dx <= r) & (dy <= r),
            (dx <= r + 3) & (dy <= 1),
            (dx <= 1) & (dy <= r + 3),
        ],
        dim=1,
    )  # [B, 4, H, W]
    mask = masks[torch.arange(batch), labels].float().unsqueeze(1)
    color = torch.rand(batch, 3, 1, 1, generator=gen) * 0.7 + 0.3
    img = mask * color + 0.15 * torch.rand(batch, 3, IMG, IMG, generator=gen)
    return img, labels


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(64, N_CLASSES)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


class HardExampleMiner:
    def __init__(self):
        self.hard_examples = []

    @torch.no_grad()
    def update(self, images, labels, per_sample_loss):
        i = int(per_sample_loss.argmax())
        self.hard_examples.append((float(per_sample_loss[i]), int(labels[i]), images[i]))

    def worst(self, k=16):
        return sorted(self.hard_examples, key=lambda e: -e[0])[:k]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=700)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--mine-every", type=int, default=4)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)

    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=args.steps)
    miner = HardExampleMiner()

    t0 = time.time()
    for step in range(1, args.steps + 1):
        raw, labels = render_batch(args.batch, gen)
        images = (raw - MEAN) / STD
        logits = model(images)
        per_sample = F.cross_entropy(logits, labels, reduction="none")
        loss = per_sample.mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step % args.mine_every == 0:
            miner.update(images, labels, per_sample.detach())

        if step % 50 == 0:
            acc = (logits.argmax(1) == labels).float().mean().item()
            ms = (time.time() - t0) / step * 1e3
            print(
                f"step {step:4d}  loss {loss.item():.3f}  acc {acc:.2f}  mined {len(miner.hard_examples)}  {ms:.1f} ms/step",
                flush=True,
            )

    worst = miner.worst()
    print("hardest examples (loss, label):", [(round(l, 2), y) for l, y, _ in worst[:5]])


if __name__ == "__main__":
    main()
