# expect: no_leak
# pattern: land-use CNN on synthetic 48x48 multispectral tiles (torch.optim.Adam, large constant learning rate) with LAWA (latest weight averaging): every --snap-every steps a detached clone of the state_dict is stored in SnapshotAverager.snapshots (a dict keyed by step) and, once more than --keep (8) are held, the oldest key is deleted; the averaged weights are written in place into one persistent eval model (load_state_dict into preallocated tensors), so memory climbs by one weight copy (~9 MB) per snapshot for the first ~30% of the run and then stays flat while snapshots rotate
# step_ms: 200
"""Latest-weight-averaging (LAWA) for a land-use tile classifier.

Training with a large constant learning rate is fast but noisy; instead of
decaying the LR we average the weights of the most recent K checkpoints
(Kaddour 2022, "Stop wasting my time! Saving days of ImageNet and BERT
training with latest weight averaging").  Tiles are synthetic 4-band 48x48
patches of six land-use classes (water, forest, cropland, urban, bare soil,
wetland) with class-specific spectra and textures.
"""
import argparse
import copy
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

CLASSES = ("water", "forest", "cropland", "urban", "bare", "wetland")
SPECTRA = np.array([
    [0.05, 0.04, 0.03, 0.01],
    [0.04, 0.08, 0.05, 0.40],
    [0.08, 0.10, 0.09, 0.30],
    [0.15, 0.15, 0.16, 0.20],
    [0.20, 0.22, 0.25, 0.28],
    [0.06, 0.08, 0.06, 0.18],
], dtype=np.float32)


def make_tiles(rng, n, size=48):
    y = rng.integers(0, len(CLASSES), n)
    yy, xx = np.mgrid[0:size, 0:size] / size
    tiles = np.empty((n, 4, size, size), np.float32)
    for i, c in enumerate(y):
        spec = SPECTRA[c] * rng.uniform(0.8, 1.2, 4)
        if c == 2:      # cropland: stripes
            ang = rng.uniform(0, np.pi)
            tex = 0.5 + 0.5 * np.sign(np.sin(40 * (xx * np.cos(ang) + yy * np.sin(ang))))
        elif c == 3:    # urban: blocks
            tex = ((np.floor(xx * 8 + rng.random()) + np.floor(yy * 8 + rng.random())) % 2) * 0.8 + 0.2
        elif c == 1:    # forest: blobs
            tex = 0.7 + 0.3 * np.sin(25 * xx + rng.random() * 6) * np.sin(23 * yy + rng.random() * 6)
        else:
            tex = 1.0 + 0.1 * rng.standard_normal((size, size))
        tiles[i] = spec[:, None, None] * tex[None] + rng.normal(0, 0.03, (4, size, size))
    return torch.from_numpy(tiles), torch.from_numpy(y)


class TileNet(nn.Module):
    def __init__(self, widths=(32, 64, 160, 384)):
        super().__init__()
        layers, cin = [], 4
        for w in widths:
            layers += [nn.Conv2d(cin, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
                       nn.Conv2d(w, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
                       nn.MaxPool2d(2)]
            cin = w
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(cin, len(CLASSES))

    def forward(self, x):
        return self.head(self.features(x).mean(dim=(2, 3)))


class SnapshotAverager:
    def __init__(self, model, keep):
        self.keep = keep
        self.snapshots = {}
        self.avg_model = copy.deepcopy(model)
        self.avg_state = {k: v.clone() for k, v in self.avg_model.state_dict().items()}

    @torch.no_grad()
    def add(self, step, model):
        self.snapshots[step] = {k: v.detach().clone() for k, v in model.state_dict().items()}
        while len(self.snapshots) > self.keep:
            del self.snapshots[min(self.snapshots)]

    @torch.no_grad()
    def averaged(self):
        snaps = list(self.snapshots.values())
        for k, buf in self.avg_state.items():
            if buf.is_floating_point():
                buf.zero_()
                for s in snaps:
                    buf.add_(s[k])
                buf.div_(len(snaps))
            else:
                buf.copy_(snaps[-1][k])
        self.avg_model.load_state_dict(self.avg_state)
        return self.avg_model


@torch.no_grad()
def accuracy(model, x, y, bs=60):
    model.eval()
    correct = sum((model(xb).argmax(1) == yb).sum().item() for xb, yb in zip(x.split(bs), y.split(bs)))
    model.train()
    return correct / len(y)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=81)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--snap-every", type=int, default=3)
    p.add_argument("--keep", type=int, default=8)
    p.add_argument("--eval-every", type=int, default=9)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)
    xv, yv = make_tiles(np.random.default_rng(1234), 120)
    model = TileNet()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    lawa = SnapshotAverager(model, args.keep)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{n_params / 1e6:.2f} M parameters")

    t0 = time.perf_counter()
    losses = []
    for step in range(1, args.steps + 1):
        x, y = make_tiles(rng, args.batch_size)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % args.snap_every == 0:
            lawa.add(step, model)
        if step % args.eval_every == 0:
            acc = accuracy(model, xv, yv)
            acc_avg = accuracy(lawa.averaged(), xv, yv)
            ms = (time.perf_counter() - t0) * 1000 / step
            print(f"step {step:4d}  loss {np.mean(losses[-args.eval_every:]):.3f}  acc {acc:.3f}  "
                  f"LAWA({len(lawa.snapshots)}) acc {acc_avg:.3f}  {ms:.0f} ms/step", flush=True)


if __name__ == "__main__":
    main()
