# expect: no_leak
# pattern: the MLP surrogate is widened twice with function-preserving Net2WiderNet (hidden 512 -> 1024 -> 2048 at fixed steps); each widening builds a new model and a new AdamW, and rebinding `model`/`optimizer` drops the old ones, so parameters + grads + Adam moments step up twice (~4x each time) and then stay flat for the rest of the run (step time grows from ~13 ms to ~210 ms)
# step_ms: 50
"""Progressively widened MLP surrogate for a heat-exchanger simulator.

Training starts with a narrow network and widens every hidden layer 2x at the
--widen-at milestones using Net2WiderNet (Chen et al., 2016), which copies
randomly chosen units and splits their outgoing weights so the widened network
computes the same function.  A fresh AdamW is created after each widening.
The targets come from a cheap analytic stand-in for the simulator.
"""
import argparse
import time

import torch
from torch import nn
import torch.nn.functional as F


def simulator(x):
    """Analytic stand-in: outlet temperatures / pressure drop from 32 design variables."""
    flow = (0.3 * x[:, 0:1]).exp()
    area = (0.3 * x[:, 1:2]).exp()
    conductivity = x[:, 2:3].sigmoid()
    ntu = conductivity * area / (flow + 0.1)
    eff = 1 - torch.exp(-ntu)
    fouling = (x[:, 3:16] ** 2).mean(1, keepdim=True)
    geometry = torch.sin(x[:, 16:32] * 1.7).mean(1, keepdim=True)
    t_out = eff * (1 - 0.3 * fouling) + 0.1 * geometry
    dp = flow ** 1.8 / (area + 0.5) + 0.05 * fouling
    return torch.cat([t_out, dp, eff * geometry], dim=1)


class Surrogate(nn.Module):
    def __init__(self, d_in, width, depth, d_out):
        super().__init__()
        dims = [d_in] + [width] * depth
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.out = nn.Linear(width, d_out)

    def forward(self, x):
        for layer in self.hidden:
            x = F.relu(layer(x))
        return self.out(x)


@torch.no_grad()
def net2wider(model, factor=2, noise=1e-3):
    """Return a function-preserving copy of `model` with every hidden layer widened."""
    layers = list(model.hidden) + [model.out]
    d_in = layers[0].in_features
    old_w = layers[0].out_features
    new_w = old_w * factor
    wide = Surrogate(d_in, new_w, len(model.hidden), model.out.out_features)
    new_layers = list(wide.hidden) + [wide.out]

    prev_map = None  # unit mapping of the previous layer's outputs
    for i, (old, new) in enumerate(zip(layers, new_layers)):
        w, b = old.weight, old.bias
        if prev_map is not None:
            counts = torch.bincount(prev_map, minlength=w.shape[1]).float()
            w = w[:, prev_map] / counts[prev_map]
        if i < len(layers) - 1:
            mapping = torch.cat([torch.arange(old_w), torch.randint(0, old_w, (new_w - old_w,))])
            w, b = w[mapping], b[mapping]
            prev_map = mapping
        new.weight.copy_(w + noise * torch.randn_like(w))
        new.bias.copy_(b)
    return wide


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=350)
    parser.add_argument("--widen-at", type=int, nargs="*", default=[250, 320])
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    model = Surrogate(32, args.width, args.depth, 3)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    x_val = torch.randn(256, 32)
    y_val = simulator(x_val)

    t0 = last = time.time()
    for step in range(1, args.steps + 1):
        if step in args.widen_at:
            with torch.no_grad():
                before = F.mse_loss(model(x_val), y_val).item()
            model = net2wider(model)
            optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr * 0.5, weight_decay=1e-4)
            with torch.no_grad():
                after = F.mse_loss(model(x_val), y_val).item()
            n_params = sum(p.numel() for p in model.parameters())
            print(f"step {step}: widened to {model.out.in_features} units "
                  f"({n_params / 1e6:.1f}M params), val mse {before:.4f} -> {after:.4f}", flush=True)

        x = torch.randn(args.batch_size, 32)
        y = simulator(x)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

        if time.time() - last >= 3.0 or step == args.steps:
            with torch.no_grad():
                val = F.mse_loss(model(x_val), y_val).item()
            print(f"step {step:4d}  train mse {loss.item():.4f}  val mse {val:.4f}  "
                  f"width {model.out.in_features}  {time.time() - t0:.1f}s", flush=True)
            last = time.time()


if __name__ == "__main__":
    main()
