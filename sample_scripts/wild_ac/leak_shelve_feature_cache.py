# expect: leak
# holder: self._db|_db.cache|Shelf.cache|shelf.cache|cache|BirdClips._db
# pattern: bird-call classifier (small 2D CNN on log-mel + PCEN, torch.optim.AdamW, DataLoader num_workers=2 + persistent_workers over a 60k-clip pool sampled with replacement, time-shift TTA at validation, ~100 ms steps, code in main() + a BirdClips Dataset); features are "cached on disk" by the Dataset in a per-worker shelve database opened lazily inside each worker (self._db = shelve.open(path, writeback=True)); writeback=True was added so that the per-clip record dict can be mutated in place (rec["hits"] += 1 for the cache-stats report), but a writeback Shelf also keeps every entry it has read or written in its in-memory Shelf.cache until sync()/close(), and the workers never call either - so each worker process holds a copy of every log-mel + PCEN pair it has computed (~62 KB per clip) and the worker RSS climbs for the whole run (the pool is far larger than the clips one run touches)
# step_ms: 100
"""Bird-call classification with an on-disk log-mel cache.

Log-mels are expensive on the real (48 kHz, 5 s) recordings, so every DataLoader
worker keeps its own shelve file of computed features (no locking needed) that
survives across epochs; here the recordings are synthesised.
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")        # numpy/BLAS inside the workers
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import shelve
import shutil
import tempfile
import time

import numpy as np
import torch
from scipy.signal import lfilter
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, RandomSampler, get_worker_info

torch.set_num_threads(1)

SR = 16000
CLIP = 16000            # 1 s
N_FFT, HOP, N_MELS = 512, 128, 64
SPECIES = 12
N_POOL = 60_000
RUN_SECONDS = 16.5


def mel_filterbank():
    f = np.linspace(0, SR / 2, N_FFT // 2 + 1)
    mel = 2595 * np.log10(1 + f / 700)
    edges = np.linspace(mel[0], mel[-1], N_MELS + 2)
    w = edges[1] - edges[0]
    return np.maximum(0, 1 - np.abs(mel[None, :] - edges[1:-1, None]) / w).astype(np.float32)


MEL_FB = mel_filterbank()
WINDOW = np.hanning(N_FFT).astype(np.float32)


def synth_call(rng, species):
    t = np.arange(CLIP, dtype=np.float32) / SR
    f0 = 1500 + 450 * species
    n_notes = 2 + species % 4
    sig = np.zeros(CLIP, np.float32)
    for k in range(n_notes):
        c = rng.uniform(0.1, 0.9)
        env = np.exp(-((t - c) ** 2) / (2 * 0.02 ** 2))
        trill = np.sin(2 * np.pi * (f0 + 200 * np.sin(2 * np.pi * (8 + species) * t)) * t)
        sig += env * trill * rng.uniform(0.5, 1.0)
    return sig + rng.normal(0, 0.25, CLIP).astype(np.float32)


def log_mel(sig):
    n_frames = 1 + (len(sig) - N_FFT) // HOP
    idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n_frames)[:, None]
    spec = np.abs(np.fft.rfft(sig[idx] * WINDOW, axis=1)) ** 2
    return (MEL_FB @ spec.T).astype(np.float32)                     # (N_MELS, frames), power


def pcen(E, s=0.04, alpha=0.98, delta=2.0, r=0.5, eps=1e-6):
    """Per-channel energy normalisation (Wang et al. 2017), the usual bioacoustics front-end."""
    M = lfilter([s], [1, s - 1], E, axis=1, zi=E[:, :1] * (1 - s))[0]
    return ((E / (eps + M) ** alpha + delta) ** r - delta ** r).astype(np.float32)


class BirdClips(Dataset):
    def __init__(self, n, cache_dir, split="train", seed=0):
        self.n = n
        self.split = split
        self.cache_dir = cache_dir
        self.labels = np.random.default_rng(seed).integers(SPECIES, size=n)
        self.seed = seed
        self._db = None                       # opened lazily, once per process

    def __len__(self):
        return self.n

    def close(self):
        if self._db is not None:
            self._db.close()
            self._db = None

    def _open_db(self):
        info = get_worker_info()
        wid = info.id if info is not None else "main"
        path = os.path.join(self.cache_dir, f"{self.split}_mels_w{wid}")
        self._db = shelve.open(path, writeback=True)

    def features(self, i):
        if self._db is None:
            self._open_db()
        key = str(i)
        rec = self._db.get(key)
        if rec is None:
            rng = np.random.default_rng(self.seed * 1_000_003 + i)
            power = log_mel(synth_call(rng, int(self.labels[i])))
            rec = {"logmel": np.log(power + 1e-6), "pcen": pcen(power), "hits": 0}
            self._db[key] = rec
        rec["hits"] += 1
        return np.stack([rec["logmel"], rec["pcen"]])

    def __getitem__(self, i):
        mel = self.features(i)
        if self.split == "train":
            shift = np.random.randint(-12, 12)
            mel = np.roll(mel, shift, axis=2)
            f0 = np.random.randint(0, N_MELS - 8)
            mel[:, f0:f0 + np.random.randint(0, 8)] = 0.0            # SpecAugment-lite
        return torch.from_numpy(np.ascontiguousarray(mel)), int(self.labels[i])


class CallNet(nn.Module):
    def __init__(self):
        super().__init__()
        def blk(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(), nn.MaxPool2d(2))
        self.body = nn.Sequential(blk(2, 12), blk(12, 24), blk(24, 48), blk(48, 64))
        self.fc = nn.Linear(64, SPECIES)

    def forward(self, x):
        x = (x - x.mean(dim=(2, 3), keepdim=True)) / (x.std(dim=(2, 3), keepdim=True) + 1e-5)
        return self.fc(self.body(x).mean(dim=(2, 3)))


@torch.no_grad()
def validate_tta(model, loader, shifts=(-8, 0, 8)):
    model.eval()
    correct = n = 0
    for x, y in loader:
        probs = sum(F.softmax(model(torch.roll(x, s, dims=3)), 1) for s in shifts) / len(shifts)
        correct += (probs.argmax(1) == y).sum().item()
        n += len(y)
    model.train()
    return correct / n


def main():
    torch.manual_seed(0)
    cache_dir = tempfile.mkdtemp(prefix="mel_cache_")
    train_ds = BirdClips(N_POOL, cache_dir, "train", seed=1)
    val_ds = BirdClips(256, cache_dir, "val", seed=2)
    sampler = RandomSampler(train_ds, replacement=True, num_samples=10 ** 7)
    train_dl = DataLoader(train_ds, batch_size=32, sampler=sampler, num_workers=2,
                          persistent_workers=True, prefetch_factor=4)
    val_dl = DataLoader(val_ds, batch_size=128, num_workers=0)

    model = CallNet()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-2)
    best, patience_left = 0.0, 4
    t0 = last = time.time()
    ema_loss = None
    for step, (x, y) in enumerate(train_dl):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        ema_loss = loss.item() if ema_loss is None else 0.95 * ema_loss + 0.05 * loss.item()
        if step % 60 == 59:
            acc = validate_tta(model, val_dl)
            if acc > best + 1e-3:
                best, patience_left = acc, 4
                torch.save(model.state_dict(), os.path.join(cache_dir, "best.pt"))
            else:
                patience_left -= 1
            print(f"step {step + 1:4d} loss {ema_loss:.3f} val(tta) {acc:.3f} best {best:.3f} "
                  f"({time.time() - t0:.1f}s)", flush=True)
            last = time.time()
        elif time.time() - last > 2.5:
            print(f"step {step + 1:4d} loss {ema_loss:.3f} ({time.time() - t0:.1f}s)", flush=True)
            last = time.time()
        if time.time() - t0 > RUN_SECONDS:
            break
    print(f"stopped after {step + 1} steps, best val {best:.3f}")
    del train_dl                      # shuts the persistent workers down
    val_ds.close()
    shutil.rmtree(cache_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
