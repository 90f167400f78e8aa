# expect: no_leak
# holder:
# pattern: small 3-D U-Net segmenting synthetic vessel trees in 40^3 volumes (torch.optim.Adam, soft-Dice + BCE loss, slow ~300 ms steps of 3 volumes, code in main() + a module-level generator, an EMA class and a HardCaseBuffer); batches come from an endless generator, epoch_batches(), that per epoch builds an augmented float32 copy of the whole 48-volume training set (flips, axis permutations, intensity/gamma jitter and noise; images + masks ~25 MB) inside the generator frame; that looks like the generator frames could pile up, but the generator is a flat `while True:` loop that rebinds aug_x/aug_y at the start of every epoch (the previous epoch's copy is freed, nothing delegates with `yield from`), the EMA teacher is one deepcopy updated in place, the best weights are a single state_dict that is replaced, and hard cases live in a deque(maxlen=6), so memory is a small per-epoch sawtooth on a flat baseline
# step_ms: 300
"""3-D U-Net for vessel segmentation on synthetic volumes.

Each training volume contains a random branching tube tree (random walks
with shrinking radius) on a smooth inhomogeneous background with Rician-
like noise; the label is the tube mask. A compact 3-D U-Net (two levels)
is trained with soft-Dice + BCE; an EMA copy of the weights is evaluated
on a held-out set every epoch and the best EMA weights are kept. Volumes
with the worst Dice are kept in a small hard-case buffer and mixed into
later batches.

Main options (defaults):
    --steps 64 --batch 3
"""
import argparse
import collections
import copy
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from scipy.ndimage import gaussian_filter

torch.set_num_threads(1)

CFG = {"size": 40, "n_train": 48, "n_val": 8, "batch": 3, "lr": 4e-3, "ema": 0.9, "hard": 6}


def vessel_volume(rng, size):
    mask = np.zeros((size,) * 3, bool)
    zz, yy, xx = np.mgrid[0:size, 0:size, 0:size]
    stack = [(rng.uniform(5, size - 5, 3), rng.normal(0, 1, 3), rng.uniform(3.0, 4.5), 0)]
    while stack:
        p, d, r, depth = stack.pop()
        d = d / (np.linalg.norm(d) + 1e-9)
        for _ in range(int(rng.integers(8, 18))):
            p = p + d * 1.5
            if np.any(p < 0) or np.any(p >= size):
                break
            lo = np.maximum((p - r - 1).astype(int), 0)
            hi = np.minimum((p + r + 2).astype(int), size)
            sl = tuple(slice(a, b) for a, b in zip(lo, hi))
            dist2 = (zz[sl] - p[0]) ** 2 + (yy[sl] - p[1]) ** 2 + (xx[sl] - p[2]) ** 2
            mask[sl] |= dist2 <= r * r
            d = d + rng.normal(0, 0.25, 3)
            d /= np.linalg.norm(d)
        if depth < 3 and r > 1.2:
            for _ in range(2):
                stack.append((p.copy(), d + rng.normal(0, 0.8, 3), r * 0.75, depth + 1))
    bg = gaussian_filter(rng.normal(0, 1, (size,) * 3), 6) * 4 + 0.3
    img = bg + 1.2 * mask
    img = np.sqrt((img + rng.normal(0, 0.35, img.shape)) ** 2 + rng.normal(0, 0.35, img.shape) ** 2)
    return img.astype(np.float32), mask.astype(np.float32)


def augment_set(x, y, rng):
    xa = np.empty_like(x)
    ya = np.empty_like(y)
    for i in range(len(x)):
        perm = rng.permutation(3)
        a = np.transpose(x[i], perm)
        b = np.transpose(y[i], perm)
        for ax in range(3):
            if rng.random() < 0.5:
                a, b = np.flip(a, ax), np.flip(b, ax)
        lo, hi = a.min(), a.max()
        a = ((a - lo) / (hi - lo + 1e-6)) ** rng.uniform(0.7, 1.4)
        a = a * rng.uniform(0.8, 1.2) + rng.normal(0, 0.03, a.shape)
        xa[i], ya[i] = a, b
    return xa, ya


def epoch_batches(x, y, rng, batch, hard):
    """Endless (epoch, xb, yb, idx) stream; one augmented copy of the set per epoch."""
    epoch = 0
    while True:
        aug_x, aug_y = augment_set(x, y, rng)
        order = rng.permutation(len(x))
        for i in range(0, len(order) - batch + 1, batch):
            idx = order[i:i + batch]
            xb, yb = aug_x[idx], aug_y[idx]
            if len(hard) and rng.random() < 0.5:
                hx, hy = hard.sample(rng)
                xb, yb = np.concatenate([xb[:-1], hx[None]]), np.concatenate([yb[:-1], hy[None]])
            yield epoch, xb[:, None], yb[:, None], idx
        epoch += 1


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1), nn.InstanceNorm3d(cout, affine=True), nn.SiLU(),
                         nn.Conv3d(cout, cout, 3, padding=1), nn.InstanceNorm3d(cout, affine=True), nn.SiLU())


class UNet3d(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.e1 = conv_block(1, c)
        self.e2 = conv_block(c, 2 * c)
        self.mid = conv_block(2 * c, 4 * c)
        self.d2 = conv_block(6 * c, 2 * c)
        self.d1 = conv_block(3 * c, c)
        self.out = nn.Conv3d(c, 1, 1)

    def forward(self, x):
        e1 = self.e1(x)
        e2 = self.e2(F.max_pool3d(e1, 2))
        m = self.mid(F.max_pool3d(e2, 2))
        d2 = self.d2(torch.cat([F.interpolate(m, scale_factor=2.0), e2], 1))
        d1 = self.d1(torch.cat([F.interpolate(d2, scale_factor=2.0), e1], 1))
        return self.out(d1)


class EMA:
    def __init__(self, model, decay):
        self.decay = decay
        self.model = copy.deepcopy(model).eval()
        for p in self.model.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, model):
        for pe, p in zip(self.model.parameters(), model.parameters()):
            pe.mul_(self.decay).add_(p.detach(), alpha=1 - self.decay)


class HardCaseBuffer:
    def __init__(self, maxlen):
        self.items = collections.deque(maxlen=maxlen)

    def __len__(self):
        return len(self.items)

    def add(self, score, x, y):
        self.items.append((score, x.copy(), y.copy()))

    def sample(self, rng):
        _, x, y = self.items[rng.integers(len(self.items))]
        return x, y


def dice_loss(logits, target):
    p = torch.sigmoid(logits)
    inter = (p * target).sum((1, 2, 3, 4))
    den = p.sum((1, 2, 3, 4)) + target.sum((1, 2, 3, 4))
    return 1 - ((2 * inter + 1) / (den + 1)), p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--batch", type=int, default=CFG["batch"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    vols = [vessel_volume(rng, CFG["size"]) for _ in range(CFG["n_train"] + CFG["n_val"])]
    x = np.stack([v[0] for v in vols])
    y = np.stack([v[1] for v in vols])
    xtr, ytr = x[:CFG["n_train"]], y[:CFG["n_train"]]
    xva, yva = augment_set(x[CFG["n_train"]:], y[CFG["n_train"]:], np.random.default_rng(99))
    print(f"built {len(vols)} volumes of {CFG['size']}^3, foreground {y.mean():.3f}", flush=True)

    model = UNet3d()
    opt = torch.optim.Adam(model.parameters(), lr=CFG["lr"])
    ema = EMA(model, CFG["ema"])
    hard = HardCaseBuffer(CFG["hard"])
    best_dice, best_state = -1.0, None

    stream = epoch_batches(xtr, ytr, rng, args.batch, hard)
    t0 = time.time()
    last_epoch = 0
    for step in range(1, args.steps + 1):
        epoch, xb, yb, idx = next(stream)
        xt, yt = torch.from_numpy(np.ascontiguousarray(xb)), torch.from_numpy(np.ascontiguousarray(yb))
        logits = model(xt)
        dl, _ = dice_loss(logits, yt)
        loss = dl.mean() + F.binary_cross_entropy_with_logits(logits, yt, pos_weight=torch.tensor(4.0))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        ema.update(model)
        worst = int(dl.argmax())
        if dl[worst].item() > 0.5:
            hard.add(dl[worst].item(), xb[worst, 0], yb[worst, 0])

        if epoch != last_epoch or step % 10 == 0:
            with torch.no_grad():
                vl, _ = dice_loss(ema.model(torch.from_numpy(xva[:, None])), torch.from_numpy(yva[:, None]))
                val_dice = float(1 - vl.mean())
            if val_dice > best_dice:
                best_dice = val_dice
                best_state = {k: v.clone() for k, v in ema.model.state_dict().items()}
            last_epoch = epoch
            print(f"step {step:3d}  epoch {epoch}  loss {loss.item():.4f}  EMA val Dice {val_dice:.3f}  "
                  f"(best {best_dice:.3f})  hard cases {len(hard)}  {(time.time() - t0) / step * 1e3:.0f} ms/step",
                  flush=True)

    print(f"done; best EMA val Dice {best_dice:.3f} ({len(best_state)} tensors kept)")


if __name__ == "__main__":
    main()
