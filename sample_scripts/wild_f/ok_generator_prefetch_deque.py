# expect: no_leak
# holder: none
# pattern: chained generator pipeline (synth audio -> log-spectrogram -> batches) with a prefetch() stage that keeps at most 3 batches in a small collections.deque; consumed batches are dropped, losses kept as floats (1D CNN, torch.optim.AdamW)
# step_ms: 30
"""Keyword-spotting-style training on a streaming generator pipeline.

The input pipeline is a chain of generators, the way many research repos
write it when the data does not fit the Dataset/DataLoader mould:

    clips() -> features() -> batches() -> prefetch(depth=3)

``clips`` synthesises 1-second "utterances" (chirps + harmonics + noise),
``features`` turns each into a log-magnitude spectrogram with a NumPy STFT,
``batches`` stacks them, and ``prefetch`` reads ahead into a
``collections.deque`` so the next few batches are always ready.  The deque
is refilled only up to ``depth`` and every batch is ``popleft``-ed before
it is yielded, so at most ``depth + 1`` batches are alive at any time.
The training loop keeps a float EMA of the loss and a bounded deque of
recent accuracies.
"""
import os
import time
from collections import deque

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)

SR = 8000
N_FFT = 256
HOP = 128
N_KEYWORDS = 12
BATCH = 16
STEPS = 560


def clips(rng):
    t = np.arange(SR) / SR
    while True:
        k = int(rng.integers(N_KEYWORDS))
        f0 = 200 + 60 * k + rng.normal(0, 10)
        sweep = (1 + 0.3 * (k % 3 - 1)) * t
        sig = sum(np.sin(2 * np.pi * f0 * h * (t + 0.5 * sweep * t)) / h for h in (1, 2, 3))
        env = np.exp(-((t - rng.uniform(0.3, 0.7)) ** 2) / 0.02)
        sig = sig * env + rng.normal(0, 0.3, SR)
        yield sig.astype(np.float32), k


def features(stream):
    window = np.hanning(N_FFT).astype(np.float32)
    n_frames = 1 + (SR - N_FFT) // HOP
    idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n_frames)[:, None]
    for sig, k in stream:
        frames = sig[idx] * window
        spec = np.abs(np.fft.rfft(frames, axis=1)).T          # (freq, time)
        logspec = np.log1p(spec).astype(np.float32)
        logspec -= logspec.mean(axis=1, keepdims=True)
        yield logspec, k


def batches(stream, batch_size):
    while True:
        xs, ys = zip(*(next(stream) for _ in range(batch_size)))
        yield torch.from_numpy(np.stack(xs)), torch.tensor(ys)


def prefetch(stream, depth=3):
    buf = deque()
    for item in stream:
        buf.append(item)
        if len(buf) < depth:
            continue
        yield buf.popleft()
    while buf:
        yield buf.popleft()


class KWSNet(nn.Module):
    def __init__(self, n_freq=N_FFT // 2 + 1):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(n_freq, 64, 3, padding=1), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Conv1d(64, 64, 5, padding=2, groups=4), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Conv1d(64, 96, 3, padding=1), nn.BatchNorm1d(96), nn.ReLU())
        self.out = nn.Linear(96, N_KEYWORDS)

    def forward(self, x):
        return self.out(self.net(x).amax(dim=2))


def main():
    rng = np.random.default_rng(0)
    loader = prefetch(batches(features(clips(rng)), BATCH), depth=3)
    model = KWSNet()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=STEPS)
    ema = None
    recent_acc = deque(maxlen=50)
    t0 = time.time()
    for step, (x, y) in zip(range(STEPS), loader):
        logits = model(x)
        loss = F.cross_entropy(logits, y, label_smoothing=0.05)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        recent_acc.append((logits.argmax(1) == y).float().mean().item())
        if step % 50 == 0:
            print(f"step {step:4d}  loss {ema:.3f}  acc(50) {np.mean(recent_acc):.3f}  "
                  f"lr {sched.get_last_lr()[0]:.2e}  {time.time() - t0:.1f}s", flush=True)
    print("done", f"{time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
