# expect: no_leak
# holder: none
# pattern: Dataset with an OrderedDict LRU cache of fixed maxsize; the cache fills during the first few hundred samples and then evicts, so memory plateaus
# step_ms: 55
"""Land-cover segmentation toy: procedurally rendered 48x48 "satellite tiles".

Rendering a tile is slow, so ``TileDataset`` keeps recently used tiles in an LRU
cache (``collections.OrderedDict`` with ``maxsize=1200``). The cache grows to its
cap early in the first epoch and then every insert evicts the oldest entry, so
memory plateaus. DataLoader runs in the main process (num_workers=0).
"""
import time
from collections import OrderedDict
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader

torch.set_num_threads(1)
torch.manual_seed(2)


class TileDataset(Dataset):
    def __init__(self, n_tiles, size=48, maxsize=1200):
        self.n = n_tiles
        self.size = size
        self.maxsize = maxsize
        self._cache = OrderedDict()
        self.hits = self.misses = 0

    def __len__(self):
        return self.n

    def _render(self, idx):
        rng = np.random.default_rng(idx)
        s = self.size
        yy, xx = np.mgrid[:s, :s] / s
        # smooth random field -> terrain classes (water / field / forest)
        field = np.zeros((s, s))
        for _ in range(6):
            fx, fy, ph = rng.uniform(1, 5), rng.uniform(1, 5), rng.uniform(0, 6.3)
            field += np.sin(2 * np.pi * (fx * xx + fy * yy) + ph)
        mask = np.digitize(field, [-1.0, 1.0])
        palette = np.array([[0.1, 0.2, 0.6], [0.6, 0.6, 0.3], [0.1, 0.45, 0.1]])
        img = palette[mask].transpose(2, 0, 1) + 0.08 * rng.standard_normal((3, s, s))
        return torch.from_numpy(img.astype(np.float32)), torch.from_numpy(mask.astype(np.int64))

    def __getitem__(self, idx):
        if idx in self._cache:
            self._cache.move_to_end(idx)
            self.hits += 1
            return self._cache[idx]
        self.misses += 1
        item = self._render(idx)
        self._cache[idx] = item
        if len(self._cache) > self.maxsize:
            self._cache.popitem(last=False)
        return item


class TinyUNet(nn.Module):
    def __init__(self, c=16, n_cls=3):
        super().__init__()
        self.d1 = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.ReLU())
        self.d2 = nn.Sequential(nn.Conv2d(c, 2 * c, 3, padding=1, stride=2), nn.ReLU())
        self.u1 = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.out = nn.Conv2d(2 * c, n_cls, 1)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(a)
        return self.out(torch.cat([a, self.u1(b)], 1))


def main():
    ds = TileDataset(5000)
    # sample with replacement from a "hot" subset most of the time so the cache gets hits
    weights = torch.ones(len(ds))
    weights[:1500] = 6.0
    sampler = torch.utils.data.WeightedRandomSampler(weights, num_samples=len(ds), replacement=True)
    loader = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=0)
    model = TinyUNet()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    t0 = time.time()
    last = t0
    steps = 0
    done = False
    epoch = 0
    while not done:
        for img, mask in loader:
            loss = F.cross_entropy(model(img), mask)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            if time.time() - last > 4:
                last = time.time()
                hr = ds.hits / (ds.hits + ds.misses)
                print(f"epoch {epoch} step {steps} loss {loss.item():.3f} cache {len(ds._cache)} hit-rate {hr:.2f}")
            if time.time() - t0 > 18:
                done = True
                break
        epoch += 1
    print(f"{steps} steps, {1000 * (time.time() - t0) / steps:.1f} ms/step")


if __name__ == "__main__":
    main()
