# expect: leak
# holder: get_loaders|get_loaders.cache|lru_cache|train_dl|_workers|persistent_workers
# pattern: fast.ai-style progressive resizing of a small fabric-defect CNN (torch.optim.AdamW + OneCycle-ish LR per stage, ~40-120 ms steps growing with the image size, code in main() + module-level get_loaders()); the train DataLoader uses num_workers=2, persistent_workers=True and a worker_init_fn that gives every worker its own precomputed sensor-noise bank (K x 3 x S x S float32) in the worker's copy of the Dataset; because main() calls get_loaders(img_size, bs) at the start of every epoch and rebuilding persistent workers every epoch was slow, get_loaders is wrapped in @functools.lru_cache(maxsize=None); the image size grows every two epochs, so every stage gets a new cache key and the cache keeps every previous stage's DataLoader alive, and with it its live _MultiProcessingDataLoaderIter and two idle worker processes (interpreter + noise bank each) - the process tree gains two workers and ~tens of MB per stage, never released until exit
# step_ms: 70
"""Progressive resizing for the fabric-defect classifier (v3 of the notebook).

Train at small resolution first, then grow the crops: 32 -> 40 -> 48 -> 56 -> 64.
Synthetic woven-fabric patches with 5 defect classes stand in for the real scans.
"""
import copy
import functools
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, get_worker_info

torch.set_num_threads(1)

CLASSES = ["ok", "hole", "stain", "broken_yarn", "knot"]
STAGES = [32, 40, 48, 56, 64]          # img size per stage
EPOCHS_PER_STAGE = 2
STEPS_PER_EPOCH = 20
BS = 48
NOISE_BANK = 384                        # noise tiles per worker (sensor pattern noise)
SEED = 7


# ----------------------------------------------------------------------------- data
class FabricPatches(Dataset):
    def __init__(self, n, size, split="train"):
        self.n = n
        self.size = size
        self.split = split
        self.base_seed = 1000 if split == "train" else 99_000
        self.noise = None               # filled per worker in worker_init_fn
        yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
        self.yy, self.xx = yy / size, xx / size

    def __len__(self):
        return self.n

    def _weave(self, rng):
        f1, f2 = rng.uniform(6, 14, size=2)
        ph = rng.uniform(0, 2 * np.pi, size=2)
        warp = np.sin(2 * np.pi * f1 * self.xx + ph[0])
        weft = np.sin(2 * np.pi * f2 * self.yy + ph[1])
        base = 0.5 + 0.25 * warp * weft
        tint = rng.uniform(0.6, 1.0, size=(3, 1, 1)).astype(np.float32)
        return base[None] * tint

    def __getitem__(self, i):
        rng = np.random.default_rng(self.base_seed + i * 7919 + (0 if self.split != "train" else np.random.randint(1 << 30)))
        y = int(rng.integers(len(CLASSES)))
        img = self._weave(rng)
        cy, cx = rng.uniform(0.25, 0.75, size=2)
        r = rng.uniform(0.06, 0.14)
        d = (self.yy - cy) ** 2 + (self.xx - cx) ** 2
        if y == 1:
            img = img * (d > r * r)
        elif y == 2:
            img = img + 0.35 * np.exp(-d / (2 * r * r))[None] * np.array([0.6, 0.4, 0.1], np.float32)[:, None, None]
        elif y == 3:
            band = np.abs(self.yy - cy) < r / 4
            img = np.where(band[None], img.mean(), img)
        elif y == 4:
            img = img + 0.5 * (d < (r / 2) ** 2)[None]
        if self.noise is not None:
            img = img + 0.05 * self.noise[rng.integers(len(self.noise))]
        if self.split == "train" and rng.random() < 0.5:
            img = img[:, :, ::-1]
        return torch.from_numpy(np.ascontiguousarray(img, dtype=np.float32)), y


def seed_worker(worker_id):
    info = get_worker_info()
    ds = info.dataset
    np.random.seed(SEED * 100 + worker_id)
    rng = np.random.default_rng(SEED + worker_id)
    # fixed-pattern noise of the line-scan camera, pre-generated once per worker
    ds.noise = rng.standard_normal((NOISE_BANK, 3, ds.size, ds.size)).astype(np.float32)


@functools.lru_cache(maxsize=None)
def get_loaders(img_size, bs):
    """Build (train_dl, val_dl) for one resolution.

    Cached: we call this every epoch and persistent workers are expensive to spin up.
    """
    train_ds = FabricPatches(20_000, img_size, "train")
    val_ds = FabricPatches(384, img_size, "val")
    train_dl = DataLoader(train_ds, batch_size=bs, shuffle=True, num_workers=2,
                          persistent_workers=True, worker_init_fn=seed_worker,
                          drop_last=True, prefetch_factor=2)
    val_dl = DataLoader(val_ds, batch_size=128, shuffle=False, num_workers=0)
    return train_dl, val_dl


# ----------------------------------------------------------------------------- model
class Net(nn.Module):
    def __init__(self, n_cls=len(CLASSES)):
        super().__init__()
        ch = [3, 24, 48, 64]
        self.feats = nn.Sequential(*[
            nn.Sequential(nn.Conv2d(ch[i], ch[i + 1], 3, padding=1, bias=False),
                          nn.BatchNorm2d(ch[i + 1]), nn.ReLU(inplace=True), nn.MaxPool2d(2))
            for i in range(3)])
        self.head = nn.Linear(ch[-1], n_cls)

    def forward(self, x):
        x = self.feats(x)
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def one_cycle(step, total, peak):
    pct = step / max(1, total)
    if pct < 0.3:
        return peak * (0.1 + 0.9 * pct / 0.3)
    return peak * 0.5 * (1 + math.cos(math.pi * (pct - 0.3) / 0.7))


@torch.no_grad()
def validate(model, dl):
    model.eval()
    conf = np.zeros((len(CLASSES), len(CLASSES)), np.int64)
    tot_loss, n = 0.0, 0
    for x, y in dl:
        out = model(x)
        tot_loss += F.cross_entropy(out, y, reduction="sum").item()
        n += len(y)
        np.add.at(conf, (y.numpy(), out.argmax(1).numpy()), 1)
    model.train()
    return tot_loss / n, np.trace(conf) / conf.sum(), conf


def main():
    torch.manual_seed(SEED)
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.05)
    best_acc, best_state, bad_epochs = -1.0, None, 0
    t0 = time.time()
    epoch = 0
    for stage, img_size in enumerate(STAGES):
        for e in range(EPOCHS_PER_STAGE):
            train_dl, val_dl = get_loaders(img_size, BS)
            it = iter(train_dl)
            running = 0.0
            for step in range(STEPS_PER_EPOCH):
                x, y = next(it)
                for g in opt.param_groups:
                    g["lr"] = one_cycle(e * STEPS_PER_EPOCH + step, EPOCHS_PER_STAGE * STEPS_PER_EPOCH, 3e-3)
                out = model(x)
                loss = F.cross_entropy(out, y, label_smoothing=0.05)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 2.0)
                opt.step()
                running += loss.item()
            del it
            vl, va, conf = validate(model, val_dl)
            if va > best_acc:
                best_acc, best_state, bad_epochs = va, copy.deepcopy(model.state_dict()), 0
            else:
                bad_epochs += 1
            per_cls = np.diag(conf) / np.maximum(conf.sum(1), 1)
            print(f"ep {epoch:2d} sz {img_size} train {running / STEPS_PER_EPOCH:.3f} val {vl:.3f} "
                  f"acc {va:.3f} worst={CLASSES[int(per_cls.argmin())]} t={time.time() - t0:.1f}s", flush=True)
            epoch += 1
    model.load_state_dict(best_state)
    print(f"done. best val acc {best_acc:.3f}; loaders cached: {get_loaders.cache_info().currsize}")


if __name__ == "__main__":
    main()
