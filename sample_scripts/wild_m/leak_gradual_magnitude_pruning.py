# expect: leak
# holder: layer.parametrizations.weight|parametrizations
# pattern: every pruning round calls torch.nn.utils.parametrize.register_parametrization(layer, "weight", MagnitudeMask(mask)) again on layers that are already parametrized; instead of replacing the old mask this appends another MagnitudeMask module (with its own float32 mask buffer the size of the weight) to layer.parametrizations.weight, so one full-size mask per layer per round accumulates for the whole run (MLP, torch.optim.SGD with momentum)
# step_ms: 38
"""Gradual magnitude pruning (Zhu & Gupta 2017) of an MLP classifier.

Sparsity follows the cubic schedule s_t = s_f + (s_i - s_f) * (1 - t / T)^3 and
is re-applied every --prune-every steps: the smallest-magnitude weights of
each Linear layer are masked out through a torch parametrization, so the
optimizer keeps updating the dense weights while the forward pass only ever
sees the masked ones.  The data are synthetic 28x28 "strokes" from 10 classes.
"""
import argparse
import time

import torch
from torch import nn
import torch.nn.functional as F
from torch.nn.utils import parametrize


class MagnitudeMask(nn.Module):
    def __init__(self, mask):
        super().__init__()
        self.register_buffer("mask", mask)

    def forward(self, weight):
        return weight * self.mask


def prunable_layers(model):
    return [m for m in model.modules() if isinstance(m, nn.Linear)]


@torch.no_grad()
def apply_sparsity(model, sparsity):
    """(Re-)apply magnitude masks so that each layer has the requested sparsity."""
    kept = total = 0
    for layer in prunable_layers(model):
        w = layer.weight.detach()  # already masked if the layer was pruned before
        k = int(sparsity * w.numel())
        if k < 1:
            continue
        threshold = w.abs().flatten().kthvalue(k).values
        mask = (w.abs() > threshold).float()
        parametrize.register_parametrization(layer, "weight", MagnitudeMask(mask))
        kept += int(mask.sum())
        total += mask.numel()
    return 1.0 - kept / total if total else 0.0


def cubic_sparsity(step, start, end, final_sparsity, initial_sparsity=0.0):
    if step <= start:
        return initial_sparsity
    t = min(1.0, (step - start) / max(1, end - start))
    return final_sparsity + (initial_sparsity - final_sparsity) * (1 - t) ** 3


class StrokeDigits:
    """10 classes, each a random set of strokes; samples are jittered and noisy."""

    def __init__(self, seed, n_classes=10):
        g = torch.Generator().manual_seed(seed)
        self.g = g
        self.protos = torch.zeros(n_classes, 28, 28)
        for c in range(n_classes):
            for _ in range(3):
                r0, c0 = torch.randint(4, 24, (2,), generator=g).tolist()
                dr, dc = torch.randint(-1, 2, (2,), generator=g).tolist()
                for t in range(10):
                    r, cc = r0 + dr * t, c0 + dc * t
                    if 0 <= r < 28 and 0 <= cc < 28:
                        self.protos[c, r, cc] = 1.0
        self.protos = F.avg_pool2d(self.protos[:, None], 3, 1, 1)[:, 0] * 3
        self.n_classes = n_classes

    def batch(self, n):
        y = torch.randint(0, self.n_classes, (n,), generator=self.g)
        shift = torch.randint(-2, 3, (2,), generator=self.g).tolist()
        x = torch.roll(self.protos[y], shifts=shift, dims=(1, 2))
        x = x + 0.8 * torch.randn(x.shape, generator=self.g)
        return x.flatten(1), y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=360)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--prune-start", type=int, default=40)
    parser.add_argument("--prune-end", type=int, default=280)
    parser.add_argument("--prune-every", type=int, default=20)
    parser.add_argument("--final-sparsity", type=float, default=0.9)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    data = StrokeDigits(args.seed)
    model = nn.Sequential(
        nn.Linear(784, 1024), nn.ReLU(),
        nn.Linear(1024, 768), nn.ReLU(),
        nn.Linear(768, 256), nn.ReLU(),
        nn.Linear(256, 10),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)

    t0 = time.time()
    sparsity = 0.0
    run_loss, run_acc, n = 0.0, 0.0, 0
    for step in range(1, args.steps + 1):
        if step >= args.prune_start and step % args.prune_every == 0:
            target = cubic_sparsity(step, args.prune_start, args.prune_end, args.final_sparsity)
            sparsity = apply_sparsity(model, target)

        x, y = data.batch(args.batch_size)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

        run_loss += loss.item()
        run_acc += (logits.argmax(1) == y).float().mean().item()
        n += 1
        if step % 40 == 0:
            print(f"step {step:4d}  loss {run_loss / n:.3f}  acc {run_acc / n:.3f}  "
                  f"sparsity {sparsity:.2f}  {time.time() - t0:.1f}s", flush=True)
            run_loss, run_acc, n = 0.0, 0.0, 0

    print(f"final sparsity {sparsity:.3f} after {args.steps} steps ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
