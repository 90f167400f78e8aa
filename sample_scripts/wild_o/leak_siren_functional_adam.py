# expect: leak
# holder: opt.m|opt.v|self.m|self.v
# pattern: functional-style SIREN fit of a synthetic terrain heightmap (params in a plain dict, torch.func.functional_call, hand-written Adam, no torch.optim); Adam.update() returns fresh detached parameter tensors and moves the moments to the new tensor keys (self.m[q] = m) but never pops the old keys, so self.m / self.v keep every step's old parameter tensors (the dict keys) and moment buffers
# step_ms: 5
"""Implicit neural representation of a terrain tile.

Fits a small SIREN (sine-activated MLP) to a 256x256 heightmap so the tile can
be stored as a few thousand weights and sampled at any resolution.  The heightmap is
procedural (ridged multi-octave noise plus a couple of volcanic cones), which
is a reasonable stand-in for the DEM tiles we compress.

Training is written functionally -- parameters live in a dict and the update
rule returns a new dict -- so the same code can be vmapped over tiles later.
"""
import argparse
import math
import time

import numpy as np
import torch
from torch.func import functional_call


def ridged_noise(n, octaves, rng):
    out = np.zeros((n, n))
    amp, freq = 1.0, 2
    for _ in range(octaves):
        coarse = rng.standard_normal((freq + 1, freq + 1))
        xs = np.linspace(0, freq, n)
        i0 = np.clip(xs.astype(int), 0, freq - 1)
        f = xs - i0
        f = f * f * (3 - 2 * f)
        rows = coarse[i0] * (1 - f)[:, None] + coarse[i0 + 1] * f[:, None]
        layer = rows[:, i0] * (1 - f)[None] + rows[:, i0 + 1] * f[None]
        out += amp * (1 - np.abs(layer))
        amp *= 0.5
        freq *= 2
    return out


def make_tile(n, rng):
    h = ridged_noise(n, 6, rng)
    yy, xx = np.mgrid[0:n, 0:n] / n
    for cx, cy, r in rng.uniform([0.2, 0.2, 0.05], [0.8, 0.8, 0.15], size=(2, 3)):
        d = np.hypot(xx - cx, yy - cy)
        h += 1.5 * np.exp(-(d / r) ** 2) - 0.8 * np.exp(-(d / (0.3 * r)) ** 2)
    h = (h - h.mean()) / h.std()
    coords = np.stack([xx, yy], -1).reshape(-1, 2) * 2 - 1
    return torch.tensor(coords, dtype=torch.float32), torch.tensor(h.reshape(-1, 1), dtype=torch.float32)


class Siren(torch.nn.Module):
    def __init__(self, width=40, depth=3, w0=30.0):
        super().__init__()
        dims = [2] + [width] * depth
        self.layers = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.out = torch.nn.Linear(width, 1)
        self.w0 = w0
        with torch.no_grad():
            self.layers[0].weight.uniform_(-1 / 2, 1 / 2)
            for layer in self.layers[1:]:
                bound = math.sqrt(6 / width) / w0
                layer.weight.uniform_(-bound, bound)

    def forward(self, x):
        for layer in self.layers:
            x = torch.sin(self.w0 * layer(x))
        return self.out(x)


class Adam:
    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, betas[0], betas[1], eps
        self.t = 0
        self.m, self.v = {}, {}

    def update(self, params, grads):
        self.t += 1
        c1 = 1 - self.b1 ** self.t
        c2 = 1 - self.b2 ** self.t
        new = {}
        for name, p in params.items():
            g = grads[name]
            m = self.m.get(p)
            v = self.v.get(p)
            if m is None:
                m, v = torch.zeros_like(p), torch.zeros_like(p)
            m = self.b1 * m + (1 - self.b1) * g
            v = self.b2 * v + (1 - self.b2) * g * g
            q = (p - self.lr * (m / c1) / ((v / c2).sqrt() + self.eps)).detach().requires_grad_()
            self.m[q], self.v[q] = m, v
            new[name] = q
        return new


def psnr(pred, target):
    mse = torch.mean((pred - target) ** 2).item()
    peak = (target.max() - target.min()).item()
    return 10 * math.log10(peak ** 2 / mse)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--steps", type=int, default=4400)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--chunk", type=int, default=512)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    coords, heights = make_tile(args.size, rng)
    net = Siren()
    params = {k: v.detach().clone().requires_grad_() for k, v in net.named_parameters()}
    n_weights = sum(p.numel() for p in params.values())
    print(f"tile {args.size}x{args.size}, SIREN with {n_weights} weights "
          f"({4 * n_weights / 1024:.1f} KiB vs {4 * heights.numel() / 1024:.0f} KiB raw)")

    opt = Adam(lr=args.lr)

    def loss_fn(params, x, y):
        pred = functional_call(net, params, (x,))
        return torch.mean((pred - y) ** 2)

    t0 = time.time()
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, coords.shape[0], (args.batch,))
        grads = {k: torch.zeros_like(p) for k, p in params.items()}
        loss = 0.0
        for chunk in idx.split(args.chunk):
            part = loss_fn(params, coords[chunk], heights[chunk]) * (len(chunk) / len(idx))
            for k, g in zip(params, torch.autograd.grad(part, list(params.values()))):
                grads[k] += g
            loss += part.item()
        params = opt.update(params, grads)

        if step % 1000 == 0 or step == args.steps:
            with torch.no_grad():
                full = torch.cat([functional_call(net, params, (c,)) for c in coords.split(16384)])
            print(f"step {step:5d}  batch mse {loss:.4f}  full-tile psnr {psnr(full, heights):.2f} dB"
                  f"  ({time.time() - t0:.1f}s)", flush=True)

    with torch.no_grad():
        fine = torch.stack(torch.meshgrid(torch.linspace(-1, 1, 512), torch.linspace(-1, 1, 512),
                                          indexing="xy"), -1).reshape(-1, 2)
        up = torch.cat([functional_call(net, params, (c,)) for c in fine.split(16384)])
    print(f"resampled at 512x512: height range [{up.min().item():.2f}, {up.max().item():.2f}]")


if __name__ == "__main__":
    main()
