# expect: leak
# holder: history
# pattern: retained graphs and activations via an object attribute (self.history)
# step_ms: 30
"""Small CNN on synthetic "shapes" images, with a Trainer class.

The Trainer records a debug entry per step in ``self.history`` so that I can
look at the worst batches after training. The entries hold ``loss`` and
``logits`` as tensors straight out of the forward pass, so every step's autograd
graph stays alive, and the input batch is kept too (to look at the images).

Fix: store ``loss.item()`` and ``logits.detach()`` (or only the top-k worst
batches), or clear the history every epoch.
"""

from __future__ import annotations

import argparse
import math
import time

import torch
from torch import nn
from torch.nn import functional as F


def render_shapes(n, size, gen):
    """Circles (0), squares (1) and crosses (2) on noisy backgrounds."""
    imgs = torch.randn(n, 1, size, size, generator=gen) * 0.3
    labels = torch.randint(0, 3, (n,), generator=gen)
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    for i in range(n):
        cx, cy = torch.randint(8, size - 8, (2,), generator=gen).tolist()
        r = 5
        if labels[i] == 0:
            mask = (xx - cx) ** 2 + (yy - cy) ** 2 <= r * r
        elif labels[i] == 1:
            mask = ((xx - cx).abs() <= r) & ((yy - cy).abs() <= r)
        else:
            mask = ((xx - cx).abs() <= 1) | ((yy - cy).abs() <= 1)
            mask &= ((xx - cx).abs() <= r) & ((yy - cy).abs() <= r)
        imgs[i, 0][mask] += 1.0
    return imgs, labels


class ShapeNet(nn.Module):
    def __init__(self, n_classes=3):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(32 * 12 * 12, n_classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


class Trainer:
    def __init__(self, model, lr, batch_size, img_size, seed):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
        self.batch_size = batch_size
        self.img_size = img_size
        self.gen = torch.Generator().manual_seed(seed)
        self.history = []
        self.global_step = 0

    def lr_at(self, step, total):
        return 0.5 * (1 + math.cos(math.pi * step / total))

    def train_step(self, total_steps):
        x, y = render_shapes(self.batch_size, self.img_size, self.gen)
        for group in self.opt.param_groups:
            group["lr"] = group.setdefault("base_lr", group["lr"]) * self.lr_at(
                self.global_step, total_steps
            )
        logits = self.model(x)
        loss = F.cross_entropy(logits, y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        acc = (logits.argmax(1) == y).float().mean()
        # keep everything around for the post-mortem of bad batches
        self.history.append(
            {"step": self.global_step, "images": x, "loss": loss, "logits": logits, "acc": acc}
        )
        self.global_step += 1
        return loss

    def fit(self, steps, log_every):
        t0 = time.perf_counter()
        for _ in range(steps):
            loss = self.train_step(steps)
            if self.global_step % log_every == 0:
                recent = self.history[-log_every:]
                mean_acc = sum(h["acc"].item() for h in recent) / len(recent)
                print(
                    f"[{self.global_step:4d}] loss={loss.item():.3f} acc={mean_acc:.2f} "
                    f"{(time.perf_counter() - t0) / self.global_step * 1e3:.0f} ms/step",
                    flush=True,
                )

    def worst_batches(self, k=5):
        return sorted(self.history, key=lambda h: -h["loss"].item())[:k]


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=550)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--img-size", type=int, default=48)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--log-every", type=int, default=40)
    p.add_argument("--seed", type=int, default=3)
    return p.parse_args()


if __name__ == "__main__":
    args = parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    trainer = Trainer(ShapeNet(), args.lr, args.batch_size, args.img_size, args.seed)
    trainer.fit(args.steps, args.log_every)
    for h in trainer.worst_batches():
        print("worst step", h["step"], "loss", round(h["loss"].item(), 3))
