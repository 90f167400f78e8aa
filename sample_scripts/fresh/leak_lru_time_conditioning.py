# expect: leak
# holder: time_conditioning|lru_cache
# pattern: functools.lru_cache(maxsize=None) on a tensor-returning helper keyed by a continuous timestep, so every step adds a new cached tensor
# step_ms: 16
"""1-D denoising diffusion model on synthetic waveforms (score matching with
continuous time).

``time_conditioning(t, length, dim)`` builds the sinusoidal time x position
conditioning table that is added to the denoiser input. It was written for
the original discrete-time DDPM setup (t in {0..999}), where caching it with
``@functools.lru_cache(maxsize=None)`` made sense: at most 1000 tables.
After switching to continuous-time training (``t ~ U(0, 1)`` drawn per
batch as a Python float), every call has a brand-new key, so the cache
stores one ``length x dim`` float32 table per training step, forever. The
hit rate (printed from ``cache_info()``) is 0%.

Fix: drop the cache (the table is cheap), or quantise t before the call, or
use ``lru_cache(maxsize=1024)``.
"""

import argparse
import functools
import math
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SIGNAL_LEN = 256
CHANNELS = 4
COND_DIM = 64


@functools.cache
def time_conditioning(t: float, length: int, dim: int) -> torch.Tensor:
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    freqs = torch.exp(-math.log(10_000.0) * torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    phase = (pos + 1000.0 * t) * freqs
    return torch.cat([torch.sin(phase), torch.cos(phase)], dim=1)  # [length, dim]


class Denoiser(nn.Module):
    def __init__(self, channels=CHANNELS, cond_dim=COND_DIM, width=32):
        super().__init__()
        self.inp = nn.Conv1d(channels + cond_dim, width, 5, padding=2)
        self.blocks = nn.ModuleList(
            [nn.Conv1d(width, width, 5, padding=2 * d, dilation=d) for d in (1, 2, 4, 8)]
        )
        self.norms = nn.ModuleList([nn.GroupNorm(4, width) for _ in range(4)])
        self.out = nn.Conv1d(width, channels, 3, padding=1)

    def forward(self, x, t):
        cond = (
            time_conditioning(t, x.shape[-1], COND_DIM).t().unsqueeze(0).expand(x.shape[0], -1, -1)
        )
        h = self.inp(torch.cat([x, cond], dim=1))
        for conv, norm in zip(self.blocks, self.norms):
            h = h + conv(F.silu(norm(h)))
        return self.out(F.silu(h))


def sample_waveforms(batch, gen):
    tt = torch.linspace(0, 1, SIGNAL_LEN)
    freq = torch.rand(batch, CHANNELS, 1, generator=gen) * 8 + 1
    phase = torch.rand(batch, CHANNELS, 1, generator=gen) * 2 * math.pi
    amp = torch.rand(batch, CHANNELS, 1, generator=gen) * 0.5 + 0.5
    return amp * torch.sin(2 * math.pi * freq * tt + phase)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=900)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    rng = random.Random(args.seed)

    model = Denoiser()
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)

    t0 = time.time()
    ema_loss = None
    for step in range(1, args.steps + 1):
        x0 = sample_waveforms(args.batch, gen)
        t = rng.uniform(1e-3, 1.0)  # one noise level per batch
        alpha, sigma = math.cos(0.5 * math.pi * t), math.sin(0.5 * math.pi * t)
        noise = torch.randn(x0.shape, generator=gen)
        xt = alpha * x0 + sigma * noise

        pred = model(xt, t)
        loss = F.mse_loss(pred, noise)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

        ema_loss = loss.item() if ema_loss is None else 0.98 * ema_loss + 0.02 * loss.item()
        if step % 100 == 0:
            info = time_conditioning.cache_info()
            hit = info.hits / max(1, info.hits + info.misses)
            ms = (time.time() - t0) / step * 1e3
            print(
                f"step {step:5d}  loss(ema) {ema_loss:.4f}  cond-cache hit {hit:.0%}  {ms:.1f} ms/step",
                flush=True,
            )

    print("done")


if __name__ == "__main__":
    main()
