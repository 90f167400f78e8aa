# expect: no_leak
# pattern: gradient accumulation over 4 micro-batches with zero_grad(set_to_none=True) and an in-place EMA copy; gradients appear and vanish every optimizer step (sawtooth), nothing accumulates
# step_ms: 14
"""Denoising MLP autoencoder on synthetic 28x28 stroke images, trained with
gradient accumulation (effective batch = 4 x micro-batch) and an exponential
moving average of the weights for evaluation.

``.grad`` tensors are created by the first micro-batch's backward, summed
into by the next three, and released by ``zero_grad(set_to_none=True)``
after the optimizer step, so memory goes up and down by one model's worth
of gradients every 4 micro-batches. Adam's state is created on the first
optimizer step and then reused. The EMA model is updated in place
(``lerp_``), and the logged loss is a Python float. Flat after warm-up.
"""

import argparse
import copy
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def stroke_images(n, gen):
    """Random thick line segments, one or two per image."""
    yy, xx = torch.meshgrid(torch.linspace(0, 1, 28), torch.linspace(0, 1, 28), indexing="ij")
    imgs = torch.zeros(n, 28, 28)
    for _ in range(2):
        p0 = torch.rand(n, 2, generator=gen)
        p1 = torch.rand(n, 2, generator=gen)
        d = p1 - p0
        t = (xx[None] - p0[:, 0, None, None]) * d[:, 0, None, None] + (
            yy[None] - p0[:, 1, None, None]
        ) * d[:, 1, None, None]
        t = (t / (d.pow(2).sum(1)[:, None, None] + 1e-6)).clamp(0, 1)
        px = p0[:, 0, None, None] + t * d[:, 0, None, None]
        py = p0[:, 1, None, None] + t * d[:, 1, None, None]
        dist = ((xx[None] - px) ** 2 + (yy[None] - py) ** 2).sqrt()
        imgs = torch.maximum(imgs, (1 - dist / 0.06).clamp(0, 1))
    return imgs.view(n, -1)


class AutoEncoder(nn.Module):
    def __init__(self, d=784, h=1024, z=128):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, h), nn.GELU(), nn.Linear(h, z))
        self.dec = nn.Sequential(nn.Linear(z, h), nn.GELU(), nn.Linear(h, d))

    def forward(self, x):
        return self.dec(self.enc(x))


@torch.no_grad()
def ema_update(ema, model, decay=0.995):
    for pe, pm in zip(ema.parameters(), model.parameters()):
        pe.lerp_(pm, 1 - decay)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000, help="micro-batches")
    ap.add_argument("--micro-batch", type=int, default=64)
    ap.add_argument("--accum", type=int, default=4)
    ap.add_argument("--seed", type=int, default=37)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)

    model = AutoEncoder()
    ema = copy.deepcopy(model).requires_grad_(False)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    val = stroke_images(256, gen)
    print(f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, accum {args.accum}")

    t0 = time.time()
    window = 0.0
    opt.zero_grad(set_to_none=True)
    for step in range(1, args.steps + 1):
        clean = stroke_images(args.micro_batch, gen)
        noisy = clean + 0.3 * torch.randn(clean.shape, generator=gen)
        loss = F.mse_loss(model(noisy), clean) / args.accum
        loss.backward()
        window += loss.item()

        if step % args.accum == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            ema_update(ema, model)

        if step % 100 == 0:
            with torch.no_grad():
                val_loss = F.mse_loss(
                    ema(val + 0.3 * torch.randn(val.shape, generator=gen)), val
                ).item()
            ms = (time.time() - t0) / step * 1e3
            print(
                f"micro-step {step:4d}  train {window / 100 * args.accum:.4f}  ema val {val_loss:.4f}  {ms:.1f} ms/step",
                flush=True,
            )
            window = 0.0


if __name__ == "__main__":
    main()
