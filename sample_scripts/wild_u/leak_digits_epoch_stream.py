# expect: leak
# holder: stream|epoch_stream|xa|gi_frame
# pattern: small CNN on synthetic seven-segment-style digit images (28x28, 2,000 training images) trained with torch.optim.SGD (Nesterov momentum, cosine LR), ~17 ms steps, code in main() + a module-level generator; batches come from the generator epoch_stream(), which builds one freshly augmented float32 copy of the whole training set per epoch (xa, ~6.3 MB), yields its mini-batches and then continues into the next epoch with `yield from epoch_stream(..., epoch + 1)`; the recursion never returns, so every epoch's generator frame stays suspended inside the delegation chain (each one parked at its `yield from`) and keeps its local xa alive; the chain (reachable from main()'s `stream`) gains one frame and one augmented copy every 31 steps (~0.5 s) for the whole run
# step_ms: 17
"""Seven-segment digits: a small CNN with on-the-fly epoch augmentation.

Digits are rendered from seven stroke segments with random thickness,
slant, stroke dropout and background clutter. Each epoch sees a new
augmented copy of the training set (random translation, contrast, speckle
noise, vectorised over the whole set), produced by a small infinite
generator so that the training loop can be written as a single
`for step, batch in zip(range(steps), stream)` loop.

Main options (defaults):
    --steps 1000 --batch 64
"""
import argparse
import math
import os
import time
from dataclasses import dataclass

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

SEGMENTS = {  # a, b, c, d, e, f, g
    0: "abcdef", 1: "bc", 2: "abged", 3: "abgcd", 4: "fgbc",
    5: "afgcd", 6: "afgedc", 7: "abc", 8: "abcdefg", 9: "abcfgd",
}
SEG_LINES = {  # endpoints in a unit box, y down
    "a": ((0.2, 0.1), (0.8, 0.1)), "b": ((0.8, 0.1), (0.8, 0.5)), "c": ((0.8, 0.5), (0.8, 0.9)),
    "d": ((0.2, 0.9), (0.8, 0.9)), "e": ((0.2, 0.5), (0.2, 0.9)), "f": ((0.2, 0.1), (0.2, 0.5)),
    "g": ((0.2, 0.5), (0.8, 0.5)),
}


@dataclass
class Config:
    n_train: int = 2000
    n_val: int = 500
    size: int = 28
    batch: int = 64
    lr: float = 0.05
    momentum: float = 0.9
    wd: float = 5e-4
    max_shift: int = 3


def render_digits(rng, n, size):
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    imgs = np.zeros((n, size, size), np.float32)
    labels = rng.integers(0, 10, n)
    for i in range(n):
        slant = rng.uniform(-0.15, 0.15)
        thick = rng.uniform(0.035, 0.07)
        sx, sy = rng.uniform(0.75, 1.0), rng.uniform(0.8, 1.0)
        ox, oy = rng.uniform(-0.05, 0.05, 2)
        img = np.zeros((size, size), np.float32)
        for s in SEGMENTS[int(labels[i])]:
            if rng.random() < 0.04:
                continue
            (x0, y0), (x1, y1) = SEG_LINES[s]
            p0 = np.array([0.5 + (x0 - 0.5) * sx + slant * (0.5 - y0) + ox, 0.5 + (y0 - 0.5) * sy + oy])
            p1 = np.array([0.5 + (x1 - 0.5) * sx + slant * (0.5 - y1) + ox, 0.5 + (y1 - 0.5) * sy + oy])
            d = p1 - p0
            t = np.clip(((xx - p0[0]) * d[0] + (yy - p0[1]) * d[1]) / (d @ d), 0, 1)
            dist = np.hypot(xx - p0[0] - t * d[0], yy - p0[1] - t * d[1])
            img = np.maximum(img, np.clip(1.5 - dist / thick, 0, 1))
        imgs[i] = img
    imgs += (rng.random((n, size, size)) < 0.02) * rng.uniform(0.3, 0.8, (n, size, size)).astype(np.float32)
    return imgs[:, None], labels


def augment(x, rng, cfg):
    """Random translation (pad + crop), contrast and speckle for the whole set."""
    n, _, h, w = x.shape
    s = cfg.max_shift
    padded = np.pad(x, ((0, 0), (0, 0), (s, s), (s, s)))
    dy = rng.integers(0, 2 * s + 1, n)
    dx = rng.integers(0, 2 * s + 1, n)
    rows = dy[:, None] + np.arange(h)[None]
    cols = dx[:, None] + np.arange(w)[None]
    out = padded[np.arange(n)[:, None, None], 0, rows[:, :, None], cols[:, None, :]][:, None]
    out = out * rng.uniform(0.7, 1.3, (n, 1, 1, 1)).astype(np.float32)
    out = out + rng.normal(0, 0.08, out.shape).astype(np.float32)
    return out.astype(np.float32)


def epoch_stream(x, y, rng, cfg, epoch=0):
    """Endless stream of (epoch, xb, yb); every epoch gets a fresh augmented copy."""
    xa = augment(x, rng, cfg)
    order = rng.permutation(len(xa))
    for i in range(0, len(order) - cfg.batch + 1, cfg.batch):
        idx = order[i:i + cfg.batch]
        yield epoch, xa[idx], y[idx]
    yield from epoch_stream(x, y, rng, cfg, epoch + 1)


class DigitNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.c3 = nn.Conv2d(32, 48, 3, padding=1)
        self.bn1, self.bn2, self.bn3 = nn.BatchNorm2d(16), nn.BatchNorm2d(32), nn.BatchNorm2d(48)
        self.fc = nn.Linear(48, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.c1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.c2(x))), 2)
        x = F.relu(self.bn3(self.c3(x)))
        return self.fc(x.mean((2, 3)))


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    correct = 0
    for i in range(0, len(x), 250):
        correct += (model(torch.from_numpy(x[i:i + 250])).argmax(1).numpy() == y[i:i + 250]).sum()
    model.train()
    return correct / len(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    cfg = Config(batch=args.batch)
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    x_tr, y_tr = render_digits(rng, cfg.n_train, cfg.size)
    x_va, y_va = render_digits(np.random.default_rng(999), cfg.n_val, cfg.size)

    model = DigitNet()
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, nesterov=True, weight_decay=cfg.wd)
    lr_at = lambda s: 0.5 * (1 + math.cos(math.pi * s / args.steps))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)

    stream = epoch_stream(x_tr, y_tr, rng, cfg)
    t0 = time.time()
    last_epoch, ep_loss, ep_n = 0, 0.0, 0
    for step, (epoch, xb, yb) in zip(range(1, args.steps + 1), stream):
        if epoch != last_epoch:
            if epoch % 5 == 0:
                acc = evaluate(model, x_va, y_va)
                print(f"epoch {last_epoch:3d}  step {step:5d}  train loss {ep_loss / max(ep_n, 1):.4f}  "
                      f"val acc {acc:.3f}  lr {sched.get_last_lr()[0]:.4f}  "
                      f"{(time.time() - t0) / step * 1e3:.1f} ms/step", flush=True)
            last_epoch, ep_loss, ep_n = epoch, 0.0, 0
        logits = model(torch.from_numpy(xb))
        loss = F.cross_entropy(logits, torch.from_numpy(yb), label_smoothing=0.05)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        ep_loss += loss.item()
        ep_n += 1

    print(f"done: {args.steps} steps ({last_epoch + 1} epochs), val acc {evaluate(model, x_va, y_va):.3f}")


if __name__ == "__main__":
    main()
