# expect: no_leak
# pattern: full-batch torch.optim.LBFGS (history_size=100, max_iter=2, strong-Wolfe line search) fits a Fourier-feature MLP to a terrain tile; LBFGS keeps its curvature pairs (old_dirs / old_stps, two flat copies of the ~0.1M parameters per step) in its state and pops the oldest once history_size is reached, so memory climbs for the first ~100 of 330 steps (~30% of the run) and then stays flat
# step_ms: 68
"""Neural implicit representation of a digital elevation model tile.

A synthetic 2 km x 2 km DEM tile (fractal noise ridges plus a river valley
and a few terraces) is fitted by a coordinate MLP with random Fourier
features, so that the tile can be queried at arbitrary resolution and
shipped as a few hundred KB of weights.  The whole tile fits in one batch,
so we use full-batch L-BFGS with a strong-Wolfe line search, which
converges much faster than Adam on this kind of smooth regression.
Reconstruction quality is reported as PSNR on a finer held-out grid.
"""
import argparse
import math
import time

import numpy as np
import torch
from torch import nn


def synth_dem(n, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:1:complex(0, n), 0:1:complex(0, n)]
    z = np.zeros_like(x)
    for octave in range(6):
        f = 2 ** octave * 1.5
        phase = rng.uniform(0, 2 * np.pi, 4)
        z += (0.55 ** octave) * (
            np.sin(2 * np.pi * f * x + phase[0]) * np.cos(2 * np.pi * f * y + phase[1])
            + 0.5 * np.sin(2 * np.pi * f * (x + y) + phase[2])
        )
    river = np.exp(-((y - 0.5 - 0.15 * np.sin(3 * np.pi * x)) ** 2) / 0.004)
    z = np.abs(z) - 1.2 * river
    z = np.round(z * 6) / 6 * 0.3 + z * 0.7
    z = (z - z.mean()) / z.std()
    return x, y, z.astype(np.float32)


def grid_points(x, y, z):
    coords = torch.from_numpy(np.stack([x.ravel(), y.ravel()], 1).astype(np.float32))
    return coords, torch.from_numpy(z.ravel()[:, None])


class FourierMLP(nn.Module):
    def __init__(self, n_freq=64, scale=6.0, width=256, depth=3, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("B", torch.randn(2, n_freq, generator=g) * scale)
        layers, d = [], 2 * n_freq
        for _ in range(depth):
            layers += [nn.Linear(d, width), nn.Tanh()]
            d = width
        layers.append(nn.Linear(d, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, xy):
        proj = 2 * math.pi * xy @ self.B
        return self.net(torch.cat([torch.sin(proj), torch.cos(proj)], dim=-1))


def psnr(pred, target):
    mse = torch.mean((pred - target) ** 2).item()
    peak = (target.max() - target.min()).item()
    return 10 * math.log10(peak ** 2 / max(mse, 1e-12))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-res", type=int, default=60)
    ap.add_argument("--eval-res", type=int, default=121)
    ap.add_argument("--steps", type=int, default=330)
    ap.add_argument("--history", type=int, default=100)
    ap.add_argument("--width", type=int, default=192)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    torch.manual_seed(args.seed)

    train_xy, train_z = grid_points(*synth_dem(args.train_res, args.seed))
    eval_xy, eval_z = grid_points(*synth_dem(args.eval_res, args.seed))
    model = FourierMLP(width=args.width, seed=args.seed)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{len(train_xy)} training points, {n_params} parameters")

    opt = torch.optim.LBFGS(
        model.parameters(), lr=1.0, max_iter=2, history_size=args.history, line_search_fn="strong_wolfe"
    )
    n_evals = 0

    def closure():
        nonlocal n_evals
        opt.zero_grad()
        loss = torch.mean((model(train_xy) - train_z) ** 2)
        loss.backward()
        n_evals += 1
        return loss

    t0 = time.perf_counter()
    best = 0.0
    for step in range(1, args.steps + 1):
        loss = opt.step(closure)
        if step % 60 == 0 or step == args.steps:
            with torch.no_grad():
                score = psnr(model(eval_xy), eval_z)
            best = max(best, score)
            state = opt.state[opt._params[0]]
            print(
                f"step {step:4d}  loss {loss.item():.5f}  eval PSNR {score:5.2f} dB  "
                f"curvature pairs {len(state.get('old_dirs', []))}  fevals {n_evals}  "
                f"{1000 * (time.perf_counter() - t0) / step:.0f} ms/step",
                flush=True,
            )
    print(f"best eval PSNR {best:.2f} dB, compressed size {n_params * 2 / 1024:.0f} KB at fp16")


if __name__ == "__main__":
    main()
