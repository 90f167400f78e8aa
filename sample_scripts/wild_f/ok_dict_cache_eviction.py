# expect: no_leak
# holder: none
# pattern: image-decode cache is a plain dict with manual LRU (pop + re-insert on hit) and eviction of the oldest key whenever len > capacity; fills during warm-up (~20 MB), then every miss evicts one entry (PIL decode, small CNN, torch.optim.SGD)
# step_ms: 45
"""Small-CNN training on PNG-compressed images with a decode cache.

The "dataset" is a list of PNG byte strings (compressed in memory at
start-up, as if read from a shard).  Decoding + resizing with PIL is the
slow part of the input pipeline, so decoded float32 arrays are cached in a
plain ``dict`` keyed by (index, size):

* on a hit the entry is popped and re-inserted, moving it to the end
  (dicts preserve insertion order, so the first key is the least recently
  used one);
* on a miss the new array is inserted and, while ``len(cache) > capacity``,
  the first (oldest) key is evicted.

Sampling is Zipf-like (some images much more popular), so the hit rate is
a useful 60-75%.  The cache holds at most ``capacity`` arrays of 3x48x48
float32 (27 KiB each, ~20 MB in all), fills during the first few dozen
steps and then stays at its cap.
"""
import io
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from PIL import Image  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)

N_IMAGES = 2000
N_CLASSES = 10
SIZE = 48
BATCH = 32
STEPS = 260
CAPACITY = 768


class DecodeCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self._store = {}
        self.hits = self.misses = 0

    def get(self, key, loader):
        try:
            value = self._store.pop(key)
            self.hits += 1
        except KeyError:
            value = loader()
            self.misses += 1
        self._store[key] = value           # (re-)insert as most recently used
        while len(self._store) > self.capacity:
            self._store.pop(next(iter(self._store)))
        return value

    def __len__(self):
        return len(self._store)


def make_png_dataset(rng):
    blobs, labels = [], []
    yy, xx = np.mgrid[0:96, 0:96]
    for i in range(N_IMAGES):
        c = int(rng.integers(N_CLASSES))
        freq = 2 + c
        img = np.stack([
            127 + 100 * np.sin(xx * freq / 30 + rng.uniform(0, 6)),
            127 + 100 * np.cos(yy * freq / 30 + rng.uniform(0, 6)),
            np.kron(rng.integers(0, 256, size=(12, 12)), np.ones((8, 8))),
        ], axis=-1).clip(0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="PNG", compress_level=1)
        blobs.append(buf.getvalue())
        labels.append(c)
    return blobs, np.array(labels)


def decode(blob, size):
    with Image.open(io.BytesIO(blob)) as im:
        im = im.convert("RGB").resize((size, size), Image.BILINEAR)
        arr = np.asarray(im, dtype=np.float32) / 255.0
    return np.ascontiguousarray(arr.transpose(2, 0, 1))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.c3 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64, N_CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = F.relu(self.c3(x))
        return self.fc(x.mean((2, 3)))


def main():
    rng = np.random.default_rng(0)
    blobs, labels = make_png_dataset(rng)
    print(f"{N_IMAGES} PNGs, {sum(map(len, blobs)) / 2**20:.1f} MiB compressed", flush=True)

    cache = DecodeCache(CAPACITY)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, nesterov=True)
    popularity = 1.0 / np.arange(1, N_IMAGES + 1) ** 0.9
    popularity /= popularity.sum()
    perm = rng.permutation(N_IMAGES)

    t0 = time.time()
    running = None
    for step in range(STEPS):
        idx = perm[rng.choice(N_IMAGES, size=BATCH, p=popularity)]
        xs = [cache.get((int(i), SIZE), lambda i=i: decode(blobs[i], SIZE)) for i in idx]
        x = torch.from_numpy(np.stack(xs))
        if rng.random() < 0.5:
            x = x.flip(3)
        y = torch.from_numpy(labels[idx])

        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running = loss.item() if running is None else 0.95 * running + 0.05 * loss.item()

        if step % 50 == 0:
            total = cache.hits + cache.misses
            print(f"step {step:4d}  loss {running:.3f}  cache {len(cache)}/{CAPACITY}  "
                  f"hit rate {cache.hits / total:.2f}  {time.time() - t0:.1f}s", flush=True)
    print("done", f"{time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
