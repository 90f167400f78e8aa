# expect: no_leak
# pattern: land-cover CNN (torch.optim.SGD, DataLoader num_workers=0) whose Dataset decodes each 4-band patch on first access and keeps the float32 copy in self._float_cache during epoch 1 (~170 MB); at the end of the first epoch compact() quantises everything into one uint8 array (~43 MB) and drops the float cache, so memory climbs through epoch 1 (first ~third of the run), steps down or holds, and is flat for epochs 2-4
# step_ms: 72
"""Land-cover classification of 4-band (RGB + NIR) image patches.

Patches are "decoded" from a procedural scene generator (per-class spectral
signatures, texture fields, clouds and haze) that stands in for the slow
GeoTIFF reader.  Decoding is expensive, so the dataset decodes a patch once,
and after the first epoch stores all patches as per-band-scaled uint8 to keep
the resident set small for the remaining epochs.
"""
import argparse
import time
from dataclasses import dataclass

import numpy as np
import torch
from scipy import ndimage
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

CLASSES = ["water", "forest", "cropland", "urban", "bare", "snow"]
# mean reflectance per band (R, G, B, NIR) for each class
SIGNATURES = np.array([
    [0.04, 0.06, 0.08, 0.02],
    [0.05, 0.09, 0.04, 0.40],
    [0.10, 0.14, 0.07, 0.32],
    [0.20, 0.19, 0.18, 0.24],
    [0.28, 0.24, 0.20, 0.30],
    [0.80, 0.82, 0.85, 0.70],
], dtype=np.float32)


@dataclass
class Config:
    n_patches: int = 2600
    patch: int = 64
    epochs: int = 4
    batch_size: int = 32
    lr: float = 0.05
    seed: int = 21


def texture(rng, n, scale):
    f = rng.standard_normal((n // scale + 2, n // scale + 2))
    f = np.kron(f, np.ones((scale, scale)))[:n, :n]
    return ndimage.uniform_filter(f, size=5, mode="reflect")


class PatchDataset(Dataset):
    def __init__(self, cfg):
        self.cfg = cfg
        rng = np.random.default_rng(cfg.seed)
        self.labels = rng.integers(0, len(CLASSES), cfg.n_patches)
        self.seeds = rng.integers(0, 2 ** 31, cfg.n_patches)
        self._float_cache = {}
        self._q = None
        self._scale = None

    def __len__(self):
        return len(self.labels)

    def decode(self, i):
        rng = np.random.default_rng(self.seeds[i])
        n = self.cfg.patch
        sig = SIGNATURES[self.labels[i]]
        mix = SIGNATURES[rng.integers(0, len(CLASSES))]
        frac = np.clip(texture(rng, n, 8) * 0.5 + 0.8, 0, 1)[None]
        img = sig[:, None, None] * frac + mix[:, None, None] * (1 - frac)
        img = img * (1 + 0.15 * texture(rng, n, 2)[None])
        cloud = np.clip(texture(rng, n, 16) - 0.8, 0, None)[None] * rng.uniform(0, 1.5)
        img = img + cloud + rng.uniform(0, 0.05)  # clouds + haze
        return np.clip(img, 0, 1.2).astype(np.float32)

    def __getitem__(self, i):
        if self._q is not None:
            x = self._q[i].astype(np.float32) * self._scale
        else:
            x = self._float_cache.get(i)
            if x is None:
                x = self._float_cache[i] = self.decode(i)
        return torch.from_numpy(x), int(self.labels[i])

    def compact(self):
        """Quantise all decoded patches to uint8 with a per-band scale."""
        for i in range(len(self)):
            if i not in self._float_cache:
                self._float_cache[i] = self.decode(i)
        band_max = np.zeros(4, np.float32)
        for x in self._float_cache.values():
            np.maximum(band_max, x.max(axis=(1, 2)), out=band_max)
        self._scale = (band_max / 255.0)[:, None, None]
        n = self.cfg.patch
        self._q = np.empty((len(self), 4, n, n), np.uint8)
        for i in range(len(self)):
            self._q[i] = np.round(self._float_cache.pop(i) / self._scale)
        self._float_cache = None
        return self._q.nbytes


class LandCoverNet(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(4, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(),
            nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(c, 2 * c, 3, padding=1), nn.BatchNorm2d(2 * c), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(2 * c, 2 * c, 3, padding=1), nn.BatchNorm2d(2 * c), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(2 * c, len(CLASSES))

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def main():
    ap = argparse.ArgumentParser()
    for name, default in vars(Config()).items():
        ap.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    cfg = Config(**vars(ap.parse_args()))

    torch.manual_seed(cfg.seed)
    ds = PatchDataset(cfg)
    loader = DataLoader(ds, batch_size=cfg.batch_size, shuffle=True, drop_last=True)
    model = LandCoverNet()
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    total = cfg.epochs * len(loader)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=total)
    t0 = time.time()
    for epoch in range(cfg.epochs):
        model.train()
        correct = seen = 0
        loss_sum = 0.0
        for b, (x, y) in enumerate(loader):
            if torch.rand(()) < 0.5:
                x = x.flip(-1)
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
            if (b + 1) % 30 == 0:
                print(f"epoch {epoch + 1} batch {b + 1:3d}/{len(loader)}  loss {loss_sum / seen:.3f}  "
                      f"acc {correct / seen:.3f}  ({time.time() - t0:.1f}s)", flush=True)
        if epoch == 0:
            nbytes = ds.compact()
            print(f"patch cache quantised to uint8: {nbytes / 1e6:.0f} MB", flush=True)
        print(f"== epoch {epoch + 1}: loss {loss_sum / seen:.3f}  acc {correct / seen:.3f}", flush=True)
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
