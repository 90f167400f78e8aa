# expect: no_leak
# holder: none
# pattern: map-style Dataset with DataLoader(num_workers=0) decodes PNG bytes through a module-level functools.lru_cache(maxsize=256) decode function keyed by (shard, index); the random crop/flip is applied afterwards to a copy, so the cache holds at most 256 decoded images (~4 MB) and memory is flat once it fills (small CNN, torch.optim.SGD)
# step_ms: 60
"""Train a small CNN on PNG-encoded images with a bounded decode cache.

Images live as PNG bytes in "shards" (lists of bytes).  Decoding is the
expensive part, so ``decode_png`` is wrapped in ``functools.lru_cache``
with a fixed size; the random augmentation is applied per call on a copy
of the cached array, so augmentations stay random while the cache stays
bounded.  The dataset object itself only holds the shard bytes.
"""
import functools
import io
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)
torch.manual_seed(0)
random.seed(0)

NUM_IMAGES = 1000
RAW_SIZE = 72
CROP = 64
NUM_CLASSES = 10
BATCH_SIZE = 16
EPOCHS = 4

SHARDS = {}


def build_shard(name, n, seed):
    rng = np.random.default_rng(seed)
    blobs, labels = [], []
    yy, xx = np.mgrid[0:RAW_SIZE, 0:RAW_SIZE]
    for _ in range(n):
        label = int(rng.integers(NUM_CLASSES))
        cx, cy = rng.integers(12, RAW_SIZE - 12, size=2)
        half = 4 + 2 * label
        img = rng.integers(0, 60, size=(RAW_SIZE, RAW_SIZE, 3), dtype=np.uint8)
        box = (np.abs(xx - cx) < half) & (np.abs(yy - cy) < half)
        img[box] = np.array([255 - 20 * label, 30 * label % 255, 200], dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="PNG", compress_level=1)
        blobs.append(buf.getvalue())
        labels.append(label)
    SHARDS[name] = blobs
    return labels


@functools.lru_cache(maxsize=256)
def decode_png(shard, index):
    arr = np.asarray(Image.open(io.BytesIO(SHARDS[shard][index])).convert("RGB"), dtype=np.uint8)
    arr.setflags(write=False)  # shared via the cache: never modify in place
    return arr


class ShardDataset(Dataset):
    def __init__(self, shard, labels, seed=0):
        self.shard = shard
        self.labels = labels
        self.rng = random.Random(seed)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        arr = decode_png(self.shard, idx)
        left = self.rng.randint(0, RAW_SIZE - CROP)
        top = self.rng.randint(0, RAW_SIZE - CROP)
        crop = arr[top:top + CROP, left:left + CROP]
        if self.rng.random() < 0.5:
            crop = crop[:, ::-1]
        x = np.ascontiguousarray(crop.transpose(2, 0, 1), dtype=np.float32)
        x = (x / 255.0 - 0.45) / 0.25
        return torch.from_numpy(x), self.labels[idx]


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64, NUM_CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = F.relu(self.conv3(x))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def main():
    labels = build_shard("train-000", NUM_IMAGES, seed=0)
    ds = ShardDataset("train-000", labels, seed=1)
    loader = DataLoader(ds, batch_size=BATCH_SIZE, shuffle=True, num_workers=0, drop_last=True,
                        generator=torch.Generator().manual_seed(0))
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=EPOCHS * len(loader))
    t0 = time.time()
    for epoch in range(EPOCHS):
        total, correct, seen = 0.0, 0, 0
        for x, y in loader:
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * y.size(0)
            correct += (logits.argmax(1) == y).sum().item()
            seen += y.size(0)
        info = decode_png.cache_info()
        print(f"epoch {epoch}: loss {total / seen:.3f} acc {correct / seen:.3f} "
              f"cache {info.currsize}/{info.maxsize} hits {info.hits} misses {info.misses} "
              f"({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
