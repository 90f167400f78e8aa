# expect: leak
# holder: call_args_list|mock_calls|augment_spy|spy|augment
# pattern: a unittest.mock.Mock(wraps=augment) "spy" left in the training notebook to check augmentation is called once per batch; the Mock records every call in call_args_list/mock_calls, keeping every raw waveform batch (numpy) alive
# step_ms: 40
"""Keyword-spotting CNN on synthetic 16 kHz clips (notebook exported as a script).

Each class is a chirp with a characteristic start/end frequency; clips get
noise, random gain and time shift as augmentation.  Log-spectrogram features
come from torch.stft.
"""
# %% imports
import time
from unittest import mock

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)
rng = np.random.default_rng(0)

SR = 16000
CLIP = 8000          # 0.5 s
N_CLASSES = 8
BATCH = 16

# %% synthetic data
f_start = rng.uniform(300, 2500, N_CLASSES)
f_end = rng.uniform(300, 2500, N_CLASSES)
t = np.arange(CLIP) / SR


def make_batch(n):
    y = rng.integers(0, N_CLASSES, n)
    f0, f1 = f_start[y][:, None], f_end[y][:, None]
    phase = 2 * np.pi * (f0 * t + (f1 - f0) * t ** 2 / (2 * t[-1]))
    env = np.hanning(CLIP)[None, :]
    x = (np.sin(phase) * env).astype(np.float32)
    return x, y


def augment(x):
    shift = rng.integers(-800, 800)
    x = np.roll(x, shift, axis=1)
    gain = rng.uniform(0.5, 1.5, (x.shape[0], 1)).astype(np.float32)
    noise = rng.normal(0, 0.3, x.shape).astype(np.float32)
    return x * gain + noise


# sanity check from the debugging session: is augment called exactly once per batch?
augment_spy = mock.Mock(wraps=augment)

# %% features + model
window = torch.hann_window(256)


def logspec(wav):
    spec = torch.stft(wav, n_fft=256, hop_length=160, window=window, return_complex=True)
    return torch.log1p(spec.abs()[:, 2:66, :])   # (B, 64 freq bins, 51 frames)


class KWSNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.c3 = nn.Conv2d(32, 32, 3, padding=1)
        self.fc = nn.Linear(32, N_CLASSES)

    def forward(self, s):
        h = F.max_pool2d(F.relu(self.c1(s[:, None])), 2)
        h = F.max_pool2d(F.relu(self.c2(h)), 2)
        h = F.relu(self.c3(h))
        return self.fc(h.mean(dim=(2, 3)))


model = KWSNet()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)

# %% train
N_STEPS = 480
t0 = time.time()
running = 0.0
for step in range(1, N_STEPS + 1):
    raw, y = make_batch(BATCH)
    wav = augment_spy(raw)
    feats = logspec(torch.from_numpy(wav))
    logits = model(feats)
    loss = F.cross_entropy(logits, torch.from_numpy(y))
    opt.zero_grad()
    loss.backward()
    opt.step()
    running = 0.95 * running + 0.05 * loss.item() if step > 1 else loss.item()
    assert augment_spy.call_count == step
    if step % 80 == 0:
        acc = (logits.argmax(1).numpy() == y).mean()
        print(f"step {step:4d}  loss(ema) {running:.3f}  batch acc {acc:.2f}  {time.time() - t0:.1f}s", flush=True)

# %% summary
print(f"finished {N_STEPS} steps in {time.time() - t0:.1f}s, final loss(ema) {running:.3f}")
