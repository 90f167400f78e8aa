# expect: leak
# holder: _decoded|decoded
# pattern: map-style Dataset (DataLoader, num_workers=0) memoises decoded+augmented samples in self._decoded keyed by (index, augmentation seed); the seed is drawn fresh on every __getitem__, so the key never repeats and the dict grows with every sample served (small CNN, torch.optim.SGD)
# step_ms: 70
"""Train a small CNN on a synthetic "JPEG-like" image dataset.

The dataset stores every image as compressed PNG bytes (the way a shard of
a web dataset is usually stored) and decodes them on the fly with Pillow.
Decoding plus augmentation was showing up in the profiler, so somebody
added a memo on the dataset instance: ``self._decoded[(idx, seed)]``.  The
idea was that re-using the same seed reproduces the same crop/flip, so the
decoded result can be reused.  But the seed comes from the dataset's own
RNG on every call, so in practice every lookup misses and every decoded
sample is stored forever.
"""
import io
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image, ImageFilter
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)
torch.manual_seed(0)
random.seed(0)
np.random.seed(0)

NUM_IMAGES = 1000
RAW_SIZE = 72
CROP = 64
NUM_CLASSES = 10
BATCH_SIZE = 16
EPOCHS = 4


def make_png_shard(n, rng):
    """Synthesise n small RGB images (class-dependent blobs) as PNG bytes."""
    blobs, labels = [], []
    yy, xx = np.mgrid[0:RAW_SIZE, 0:RAW_SIZE]
    for _ in range(n):
        label = int(rng.integers(NUM_CLASSES))
        cx, cy = rng.integers(10, RAW_SIZE - 10, size=2)
        radius = 6 + 2 * label
        mask = (xx - cx) ** 2 + (yy - cy) ** 2 < radius ** 2
        img = rng.integers(0, 60, size=(RAW_SIZE, RAW_SIZE, 3), dtype=np.uint8)
        img[mask] = np.array([25 * label, 255 - 20 * label, 128], dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="PNG", compress_level=1)
        blobs.append(buf.getvalue())
        labels.append(label)
    return blobs, labels


class PngShardDataset(Dataset):
    def __init__(self, blobs, labels, train=True, seed=0):
        self.blobs = blobs
        self.labels = labels
        self.train = train
        self._rng = random.Random(seed)
        # (idx, aug_seed) -> uint8 HWC array; "decode + augment is slow, memoise it"
        self._decoded = {}
        self.mean = np.array([0.45, 0.45, 0.45], dtype=np.float32)
        self.std = np.array([0.25, 0.25, 0.25], dtype=np.float32)

    def __len__(self):
        return len(self.blobs)

    def _decode_and_augment(self, idx, aug_seed):
        r = random.Random(aug_seed)
        img = Image.open(io.BytesIO(self.blobs[idx])).convert("RGB")
        left = r.randint(0, RAW_SIZE - CROP)
        top = r.randint(0, RAW_SIZE - CROP)
        img = img.crop((left, top, left + CROP, top + CROP))
        if r.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        if r.random() < 0.3:
            img = img.filter(ImageFilter.GaussianBlur(radius=r.uniform(0.3, 1.2)))
        return np.asarray(img, dtype=np.uint8).copy()

    def __getitem__(self, idx):
        aug_seed = self._rng.getrandbits(32) if self.train else 0
        key = (idx, aug_seed)
        arr = self._decoded.get(key)
        if arr is None:
            arr = self._decode_and_augment(idx, aug_seed)
            self._decoded[key] = arr
        x = (arr.astype(np.float32) / 255.0 - self.mean) / self.std
        x = torch.from_numpy(x.transpose(2, 0, 1).copy())
        return x, self.labels[idx]


class SmallCNN(nn.Module):
    def __init__(self, num_classes=NUM_CLASSES):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = F.relu(self.conv3(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def main():
    rng = np.random.default_rng(0)
    blobs, labels = make_png_shard(NUM_IMAGES, rng)
    train_ds = PngShardDataset(blobs, labels, train=True, seed=1)
    loader = DataLoader(train_ds, batch_size=BATCH_SIZE, shuffle=True, num_workers=0,
                        drop_last=True, generator=torch.Generator().manual_seed(0))

    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS * len(loader))

    t0 = time.time()
    step = 0
    for epoch in range(EPOCHS):
        model.train()
        running, correct, seen = 0.0, 0, 0
        for x, y in loader:
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            running += loss.item() * y.size(0)
            correct += (logits.argmax(1) == y).sum().item()
            seen += y.size(0)
            step += 1
        print(f"epoch {epoch}: loss {running / seen:.3f} acc {correct / seen:.3f} "
              f"memo entries {len(train_ds._decoded)} ({time.time() - t0:.1f}s)")
    print(f"done: {step} steps")


if __name__ == "__main__":
    main()
