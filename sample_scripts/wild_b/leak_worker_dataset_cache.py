# expect: leak
# holder: _spec_cache|cache
# pattern: Dataset.__getitem__ memoizes every computed spectrogram in a dict on the dataset; with num_workers=2 and persistent workers each worker process fills its own copy of the cache
# step_ms: 90
"""Keyword-spotting toy: synthetic audio clips -> log-spectrogram -> small CNN.

``SpeechCommandsSynth.__getitem__`` computes a log-magnitude STFT and stores it in
``self._spec_cache[idx]`` "so the next epoch is faster". The dataset is large and
the run never finishes an epoch, so each DataLoader worker (num_workers=2,
persistent_workers=True) keeps caching new spectrograms in its own process; the
growth is in the worker processes, not the main one.
Fix: drop the cache or bound it (functools.lru_cache(maxsize=...)), or precompute once.
"""
import time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader

torch.set_num_threads(1)

SR = 8000
N_WORDS = 6


class SpeechCommandsSynth(Dataset):
    def __init__(self, n_clips, seed=0):
        self.n = n_clips
        self.seed = seed
        self.window = torch.hann_window(256)
        self._spec_cache = {}

    def __len__(self):
        return self.n

    def _make_clip(self, idx):
        rng = np.random.default_rng(self.seed * 1_000_003 + idx)
        label = idx % N_WORDS
        t = np.arange(SR) / SR
        f0 = 200 + 120 * label
        sweep = np.sin(2 * np.pi * (f0 + 80 * label * t) * t)
        env = np.exp(-((t - rng.uniform(0.3, 0.7)) ** 2) / 0.02)
        clip = env * sweep + 0.3 * rng.standard_normal(SR)
        return torch.from_numpy(clip.astype(np.float32)), label

    def __getitem__(self, idx):
        if idx in self._spec_cache:
            return self._spec_cache[idx]
        clip, label = self._make_clip(idx)
        spec = torch.stft(clip, n_fft=256, hop_length=128, window=self.window, return_complex=True)
        logspec = torch.log1p(spec.abs())[:96]          # (96 freq bins, 63 frames)
        logspec = (logspec - logspec.mean()) / (logspec.std() + 1e-5)
        item = (logspec.unsqueeze(0), label)
        self._spec_cache[idx] = item
        return item


class KWSNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32, N_WORDS)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.relu(self.c2(x))
        return self.fc(x.mean(dim=(2, 3)))


def main():
    ds = SpeechCommandsSynth(200_000)
    loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2, persistent_workers=True)
    model = KWSNet()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    t0 = time.time()
    last = t0
    step = 0
    running = []
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running.append(loss.item())
        step += 1
        if time.time() - last > 4:
            last = time.time()
            print(f"step {step:5d} loss {np.mean(running[-50:]):.3f} ({last - t0:.1f}s)")
        if time.time() - t0 > 18:
            break
    print(f"{step} steps, {1000 * (time.time() - t0) / step:.1f} ms/step")


if __name__ == "__main__":
    main()
