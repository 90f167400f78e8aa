# expect: leak
# holder: _spec_cache
# pattern: keyword-spotting CNN trained from DataLoader(num_workers=2, persistent_workers=True); the Dataset's __getitem__ memoizes each log-spectrogram in self._spec_cache keyed by (idx, crop_offset), but the crop offset is random per call so almost every key is new and every worker's private copy of the dataset grows by ~8 KB per sample for the whole run (the main process stays flat)
# step_ms: 75
"""Keyword spotting on synthetic one-second clips.

Each clip is a tone whose pitch and vibrato depend on the keyword class,
buried in noise.  During training we take a random 2048-sample crop and
turn it into a log-magnitude STFT.  The STFT is the expensive bit, so the
dataset memoizes it; with persistent workers the cache survives between
epochs and later epochs should be mostly cache hits.

Workers log their cache hit rate at the end so we can tell whether the
memoization pays off.
"""
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info

torch.set_num_threads(1)

SR = 8000
CLIP = 8000
CROP = 2048
N_FFT = 128
HOP = 64
N_CLASSES = 8
EPOCHS = 3
BATCH = 32


class SyntheticKeywords(Dataset):
    def __init__(self, n_items, train=True):
        self.n_items = n_items
        self.train = train
        self.window = np.hanning(N_FFT).astype(np.float32)
        self._t = np.arange(CLIP, dtype=np.float32) / SR
        self._spec_cache = {}
        self.hits = 0
        self.misses = 0

    def __len__(self):
        return self.n_items

    def _clip(self, idx):
        rng = np.random.default_rng(idx)
        label = idx % N_CLASSES
        f0 = 180.0 + 95.0 * label
        vib = 4.0 + label
        phase = 2 * np.pi * f0 * self._t + 3.0 * np.sin(2 * np.pi * vib * self._t)
        wav = np.sin(phase).astype(np.float32)
        wav *= rng.uniform(0.3, 1.0)
        wav += 0.4 * rng.standard_normal(CLIP).astype(np.float32)
        return wav, label

    def _logspec(self, seg):
        n_frames = 1 + (len(seg) - N_FFT) // HOP
        frame_idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n_frames)[:, None]
        frames = seg[frame_idx] * self.window
        mag = np.abs(np.fft.rfft(frames, axis=1))
        return np.log1p(mag).astype(np.float32)

    def __getitem__(self, idx):
        wav, label = self._clip(idx)
        if self.train:
            offset = int(np.random.randint(0, CLIP - CROP))
        else:
            offset = (CLIP - CROP) // 2
        key = (idx, offset)
        spec = self._spec_cache.get(key)
        if spec is None:
            self.misses += 1
            spec = self._logspec(wav[offset:offset + CROP])
            self._spec_cache[key] = spec
        else:
            self.hits += 1
        if self.train and (self.hits + self.misses) % 1500 == 0:
            info = get_worker_info()
            wid = info.id if info is not None else -1
            print(f"  [worker {wid}] spec cache: {len(self._spec_cache)} entries, "
                  f"hit rate {self.hits / max(1, self.hits + self.misses):.2f}", flush=True)
        return torch.from_numpy(spec).unsqueeze(0), label


class KWSNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 24, 3, padding=1)
        self.conv2 = nn.Conv2d(24, 48, 3, padding=1)
        self.conv3 = nn.Conv2d(48, 48, 3, padding=1)
        self.fc = nn.Linear(48, N_CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.conv3(x))
        return self.fc(x.mean(dim=(2, 3)))


def main():
    train_ds = SyntheticKeywords(2400, train=True)
    loader = DataLoader(train_ds, batch_size=BATCH, shuffle=True, num_workers=2,
                        persistent_workers=True, drop_last=True)
    model = KWSNet()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)

    t0 = time.time()
    for epoch in range(EPOCHS):
        model.train()
        correct = total = 0
        loss_sum = 0.0
        for step, (x, y) in enumerate(loader):
            x = (x - 1.0) / 0.5
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            correct += (logits.argmax(1) == y).sum().item()
            total += y.numel()
            if step % 25 == 0:
                print(f"epoch {epoch} step {step:3d} loss {loss.item():.3f} "
                      f"({time.time() - t0:.1f}s)", flush=True)
        print(f"epoch {epoch}: train loss {loss_sum / (step + 1):.3f} acc {correct / total:.3f}",
              flush=True)
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
