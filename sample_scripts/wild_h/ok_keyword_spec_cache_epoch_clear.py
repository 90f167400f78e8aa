# expect: no_leak
# pattern: keyword-spotting CNN training (Adam) whose Dataset memoises each clip's log-mel spectrogram in self.spec_cache (dict keyed by index) because a repeated-augmentation sampler visits every clip twice per epoch; the trainer calls dataset.end_epoch(), which does self.spec_cache.clear() before the per-epoch gain/noise augmentation changes, so memory is a sawtooth bounded by one epoch's worth of spectrograms
# step_ms: 120
"""Small keyword-spotting model on synthetic speech-like clips.

Each "keyword" class is a sequence of formant-like chirps; clips are
rendered at 16 kHz with per-speaker pitch, random gain and background
noise.  Features are 80-band log-mel spectrograms; training uses random
48-frame crops and SpecAugment-style time/frequency masking.

Repeated augmentation: the sampler yields every clip twice per epoch with
different crops/masks, so the dataset memoises the spectrogram of each clip
for the current epoch (the clip-level gain/noise is re-drawn per epoch, so
the memo is dropped at the end of each epoch).
"""
import math
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

torch.set_num_threads(1)
torch.manual_seed(0)
random.seed(0)

SR = 16_000
CLIP = 12_000
N_FFT, HOP = 256, 125
N_MELS = 80
CROP = 48
N_CLIPS = 1200
N_CLS = 12
EPOCHS = 5


def mel_filterbank(n_fft, n_mels, sr):
    def hz2mel(f):
        return 2595 * np.log10(1 + f / 700)

    def mel2hz(m):
        return 700 * (10 ** (m / 2595) - 1)
    mels = np.linspace(hz2mel(20), hz2mel(sr / 2), n_mels + 2)
    bins = np.floor((n_fft + 1) * mel2hz(mels) / sr).astype(int)
    fb = np.zeros((n_mels, n_fft // 2 + 1), np.float32)
    for m in range(1, n_mels + 1):
        l, c, r = bins[m - 1], bins[m], bins[m + 1]
        fb[m - 1, l:c] = (np.arange(l, c) - l) / max(c - l, 1)
        fb[m - 1, c:r] = (r - np.arange(c, r)) / max(r - c, 1)
    return torch.from_numpy(fb)


class KeywordClips(Dataset):
    def __init__(self, n, seed=0):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, N_CLS, n)
        self.pitch = rng.uniform(0.8, 1.25, n)
        cls_rng = np.random.default_rng(123)
        self.formants = cls_rng.uniform(300, 3000, (N_CLS, 4, 2))  # 4 chirps, start/end freq
        self.fb = mel_filterbank(N_FFT, N_MELS, SR)
        self.window = torch.hann_window(N_FFT)
        self.epoch = 0
        self.spec_cache = {}

    def __len__(self):
        return len(self.labels)

    def _render(self, i):
        rng = np.random.default_rng(i * 7919 + self.epoch)
        t = np.arange(CLIP) / SR
        y = self.labels[i]
        wav = np.zeros(CLIP)
        seg = CLIP // 4
        for k, (f0, f1) in enumerate(self.formants[y] * self.pitch[i]):
            tt = t[:seg]
            f = np.linspace(f0, f1, seg)
            wav[k * seg:(k + 1) * seg] = np.sin(2 * np.pi * np.cumsum(f) / SR) * np.hanning(seg)
        wav *= rng.uniform(0.3, 1.0)
        wav += rng.uniform(0.01, 0.2) * rng.standard_normal(CLIP)
        return torch.from_numpy(wav.astype(np.float32))

    def _logmel(self, i):
        spec = self.spec_cache.get(i)
        if spec is None:
            wav = self._render(i)
            stft = torch.stft(wav, N_FFT, HOP, window=self.window, return_complex=True)
            spec = torch.log(self.fb @ stft.abs().pow(2) + 1e-6)
            self.spec_cache[i] = spec
        return spec

    def __getitem__(self, i):
        spec = self._logmel(i)
        start = random.randint(0, spec.shape[1] - CROP)
        x = spec[:, start:start + CROP].clone()
        f0 = random.randint(0, N_MELS - 8)
        x[f0:f0 + random.randint(0, 8)] = x.mean()
        t0 = random.randint(0, CROP - 6)
        x[:, t0:t0 + random.randint(0, 6)] = x.mean()
        return x[None], int(self.labels[i])

    def end_epoch(self):
        self.spec_cache.clear()
        self.epoch += 1


class RepeatAugSampler(Sampler):
    def __init__(self, n, repeats=2):
        self.n, self.repeats = n, repeats

    def __len__(self):
        return self.n * self.repeats

    def __iter__(self):
        idx = [i for i in range(self.n) for _ in range(self.repeats)]
        random.shuffle(idx)
        return iter(idx)


class KWSNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 48, 3, stride=2, padding=1), nn.BatchNorm2d(48), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(48, N_CLS)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def main():
    ds = KeywordClips(N_CLIPS)
    loader = DataLoader(ds, batch_size=64, sampler=RepeatAugSampler(len(ds)))
    model = KWSNet()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    t0 = time.time()
    for epoch in range(EPOCHS):
        tot, correct, n = 0.0, 0, 0
        for x, y in loader:
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            n += len(y)
        cached = len(ds.spec_cache)
        ds.end_epoch()
        print(f"epoch {epoch}  loss {tot / n:.3f}  acc {correct / n:.3f}  cached specs {cached}  "
              f"({time.time() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
