# expect: no_leak
# holder:
# pattern: numpy-only streaming vibration monitor: raw frames and spectral features go into preallocated ring buffers (np.empty + explicit fill at start-up, write index modulo capacity), baseline statistics are recomputed from the ring; nothing grows after start-up
# step_ms: 1
"""Streaming vibration anomaly monitor for a rotating machine (numpy + scipy, no torch).

Every step a new 256-sample frame per accelerometer channel arrives.  The
monitor keeps the last ``CAPACITY`` raw frames and their log-spectral
features in two preallocated ring buffers (touched with ``fill`` at start-up,
so the memory is resident from the first step), computes a Hann-windowed
power spectrum plus the envelope spectrum (Hilbert demodulation), and scores each frame by its Mahalanobis-like
distance to the ring's per-bin mean/std.  Alarms are counted with a
hysteresis.  Every 500 frames it recomputes the baseline statistics from the
whole ring (a few vectorised reductions).

Why it is fine: the ring buffers are allocated once (about 75 MB) and written
in place at ``head % CAPACITY``; per-step temporaries are freed immediately;
only counters and a fixed-size alarm log (``deque(maxlen=...)``) are kept.
"""
import time
from collections import deque

import numpy as np
from scipy.signal import get_window, hilbert

N_CHANNELS = 12
FRAME = 256
CAPACITY = 4096
N_FRAMES = 22000
N_BINS = FRAME // 2 + 1
FS = 5120.0


class RingBuffer:
    def __init__(self, capacity, shape, dtype=np.float32):
        self.data = np.empty((capacity,) + shape, dtype=dtype)
        self.data.fill(0)
        self.capacity = capacity
        self.head = 0
        self.size = 0

    def push(self, item):
        self.data[self.head % self.capacity] = item
        self.head += 1
        self.size = min(self.size + 1, self.capacity)

    def view(self):
        return self.data[:self.size]


class Machine:
    """Shaft at ~25 Hz with harmonics; a bearing defect fades in and out."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.t = 0.0
        self.phase = self.rng.uniform(0, 2 * np.pi, N_CHANNELS)

    def frame(self, k):
        t = self.t + np.arange(FRAME) / FS
        self.t = t[-1] + 1 / FS
        shaft = 25.0 + 0.2 * np.sin(0.001 * k)
        sig = (np.sin(2 * np.pi * shaft * t[None] + self.phase[:, None])
               + 0.3 * np.sin(2 * np.pi * 2 * shaft * t[None]))
        defect = 1.5 * max(0.0, np.sin(2 * np.pi * (k - 1000) / 3000.0)) ** 8
        # bearing defect: 870 Hz resonance amplitude-modulated at the 97 Hz fault frequency
        impacts = (1 + np.sin(2 * np.pi * 97.0 * t[None])) ** 4 / 16
        sig = sig + defect * impacts * np.sin(2 * np.pi * 870.0 * t[None]) * (self.rng.random((N_CHANNELS, 1)) < 0.7)
        return (sig + 0.2 * self.rng.standard_normal((N_CHANNELS, FRAME))).astype(np.float32)


def main():
    machine = Machine(seed=0)
    window = get_window("hann", FRAME).astype(np.float32)
    raw = RingBuffer(CAPACITY, (N_CHANNELS, FRAME))
    feats = RingBuffer(CAPACITY, (N_CHANNELS, N_BINS))
    base_mean = np.zeros((N_CHANNELS, N_BINS), np.float32)
    base_std = np.ones((N_CHANNELS, N_BINS), np.float32)
    alarms = deque(maxlen=256)
    in_alarm = False
    n_alarms = 0
    score_ema = 0.0

    t0 = time.time()
    for k in range(N_FRAMES):
        x = machine.frame(k)
        x -= x.mean(axis=1, keepdims=True)
        spec = np.abs(np.fft.rfft(x * window, axis=1)) ** 2
        # envelope spectrum (demodulated) picks up the bearing fault frequency
        env = np.abs(hilbert(x, axis=1))
        env_spec = np.abs(np.fft.rfft((env - env.mean(axis=1, keepdims=True)) * window, axis=1)) ** 2
        logspec = np.log10(spec + env_spec + 1e-6).astype(np.float32)
        raw.push(x)
        feats.push(logspec)

        if k >= 500:
            z = (logspec - base_mean) / base_std
            score = float(np.mean(np.maximum(z, 0.0) ** 2))
            score_ema = 0.9 * score_ema + 0.1 * score
            if not in_alarm and score_ema > 1.5:
                in_alarm, n_alarms = True, n_alarms + 1
                alarms.append((k, score_ema))
            elif in_alarm and score_ema < 0.8:
                in_alarm = False

        if (k + 1) % 500 == 0:
            hist = feats.view()
            base_mean = np.median(hist[-2000:], axis=0)
            base_std = 1.4826 * np.median(np.abs(hist[-2000:] - base_mean), axis=0) + 1e-2
            rms = float(np.sqrt(np.mean(raw.view()[-500:] ** 2)))
            print(f"frame {k + 1:5d}  rms {rms:.3f}  score {score_ema:6.2f}  alarms {n_alarms}  "
                  f"{(time.time() - t0) * 1000 / (k + 1):.2f} ms/frame", flush=True)


if __name__ == "__main__":
    main()
