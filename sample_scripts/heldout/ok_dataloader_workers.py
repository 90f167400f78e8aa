# expect: no_leak
# pattern: DataLoader, 2 persistent workers, NumPy-backed dataset, pure __getitem__
# step_ms: 45
"""Traffic-sign-like classifier on procedurally drawn 32x32 images, with a
DataLoader (2 persistent workers) doing random augmentation -- the tidy twin
of leak_dataloader_augment_log.py. The dataset keeps its metadata in NumPy
arrays (no per-item Python objects whose refcounts the workers would touch)
and ``__getitem__`` mutates nothing.

Memory: flat in the main process and in each worker after the first batches.
"""

import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class SyntheticSigns(Dataset):
    def __init__(self, n, n_classes=8, size=32, seed=0):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, n_classes, n)
        self.colors = rng.uniform(0.3, 1.0, (n, 3)).astype(np.float32)
        self.size = size
        self.n_classes = n_classes
        yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size - 0.5
        self.radius = np.sqrt(xx**2 + yy**2)
        self.angle = np.arctan2(yy, xx)

    def __len__(self):
        return len(self.labels)

    def draw(self, idx):
        k = int(self.labels[idx])
        sides = 3 + k % 4
        shape = np.cos(np.pi / sides) / np.cos((self.angle % (2 * np.pi / sides)) - np.pi / sides)
        mask = (self.radius < 0.35 * shape).astype(np.float32)
        if k >= 4:
            mask *= (self.radius > 0.15).astype(np.float32)
        return mask[None] * self.colors[idx][:, None, None]

    def __getitem__(self, idx):
        img = torch.from_numpy(self.draw(idx))
        jitter = torch.randn(2, 3) * torch.tensor([[0.1, 0.2, 0.1], [0.2, 0.1, 0.1]])
        theta = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]) + jitter
        grid = F.affine_grid(theta[None], (1, 3, self.size, self.size), align_corners=False)
        img = F.grid_sample(img[None], grid, align_corners=False)[0]
        img = img * (0.7 + 0.6 * torch.rand(1)) + 0.1 * torch.randn(img.shape)
        if torch.rand(1).item() < 0.5:
            img = img.flip(2)
        return img, int(self.labels[idx])


class SignNet(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.c1 = nn.Conv2d(3, 32, 3, padding=1)
        self.c2 = nn.Conv2d(32, 64, 3, padding=1)
        self.c3 = nn.Conv2d(64, 128, 3, padding=1)
        self.fc = nn.Linear(128 * 4 * 4, n_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = F.max_pool2d(F.relu(self.c3(x)), 2)
        return self.fc(x.flatten(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--n", type=int, default=2800)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    ds = SyntheticSigns(args.n)
    loader = DataLoader(
        ds,
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        persistent_workers=args.workers > 0,
        generator=torch.Generator().manual_seed(0),
    )
    model = SignNet(ds.n_classes)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    t0 = time.time()
    for epoch in range(args.epochs):
        correct = seen = 0
        for x, y in loader:
            out = model(x)
            loss = F.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            correct += (out.argmax(1) == y).sum().item()
            seen += len(y)
            step += 1
        print(
            f"epoch {epoch} acc {correct / seen:.3f} steps {step} ({time.time() - t0:.1f}s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
