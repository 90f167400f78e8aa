# expect: leak
# holder: debug_frames|FeatureExtractor
# pattern: per-step NumPy temporaries (windowed frames) kept in a list on an object (no torch)
# step_ms: 3.5
"""Log-mel-ish feature extraction for a keyword-spotting dataset, pure NumPy.

A ``FeatureExtractor`` turns synthetic 1 s clips into log-spectrogram features
and accumulates running mean/std for normalisation. While debugging a
clipping problem somebody set ``keep_debug=True`` by default, and
``self.debug_frames`` now keeps the windowed frame matrix (the biggest
temporary of the pipeline, ~120 KiB) of every 4th clip processed.

Fix: default ``keep_debug=False``, or keep only the last few.
"""

import argparse
import time

import numpy as np

SR = 8000


def synth_clip(rng, seconds=1.0):
    n = int(SR * seconds)
    t = np.arange(n) / SR
    f0 = rng.uniform(150, 400)
    sig = np.zeros(n)
    for h in range(1, 5):
        sig += np.sin(2 * np.pi * f0 * h * t + rng.uniform(0, 6.28)) / h
    env = np.exp(-((t - rng.uniform(0.2, 0.8)) ** 2) / 0.02)
    return (sig * env + 0.05 * rng.standard_normal(n)).astype(np.float32)


def add_reverb(clip, rng, taps=3000):
    """Cheap room simulation: convolve with an exponentially decaying noise burst."""
    ir = rng.standard_normal(taps).astype(np.float32) * np.exp(-np.arange(taps) / (taps / 6))
    ir[0] = 1.0
    wet = np.convolve(clip, ir)[: len(clip)]
    return (wet / (np.abs(wet).max() + 1e-6)).astype(np.float32)


class FeatureExtractor:
    def __init__(self, n_fft=256, hop=64, n_bands=40, keep_debug=True, debug_every=4):
        self.n_fft, self.hop, self.n_bands = n_fft, hop, n_bands
        self.window = np.hanning(n_fft).astype(np.float32)
        edges = np.linspace(0, n_fft // 2 + 1, n_bands + 2).astype(int)
        self.fb = np.zeros((n_bands, n_fft // 2 + 1), dtype=np.float32)
        for b in range(n_bands):
            lo, mid, hi = edges[b], edges[b + 1], edges[b + 2]
            self.fb[b, lo:mid] = np.linspace(0, 1, mid - lo, endpoint=False)
            self.fb[b, mid:hi] = np.linspace(1, 0, hi - mid, endpoint=False)
        self.keep_debug = keep_debug
        self.debug_every = debug_every
        self.debug_frames = []
        self.count = 0
        self.n_rows = 0
        self.mean = np.zeros(n_bands)
        self.m2 = np.zeros(n_bands)

    def frames(self, clip):
        n = 1 + (len(clip) - self.n_fft) // self.hop
        idx = np.arange(self.n_fft)[None, :] + self.hop * np.arange(n)[:, None]
        return clip[idx] * self.window

    def __call__(self, clip):
        fr = self.frames(clip)
        if self.keep_debug and self.count % self.debug_every == 0:
            self.debug_frames.append(fr)
        spec = np.abs(np.fft.rfft(fr, axis=1)) ** 2
        feats = np.log(spec @ self.fb.T + 1e-6)
        self.count += 1
        for row in feats[::8]:  # Welford on a subsample of frames
            self.n_rows += 1
            d = row - self.mean
            self.mean += d / self.n_rows
            self.m2 += d * (row - self.mean)
        return feats

    @property
    def std(self):
        return np.sqrt(self.m2 / max(self.n_rows - 1, 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clips", type=int, default=3500)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    fx = FeatureExtractor()
    shapes = set()
    t0 = time.perf_counter()
    for i in range(args.clips):
        feats = fx(add_reverb(synth_clip(rng), rng))
        shapes.add(feats.shape)
        if i % 500 == 0:
            print(
                f"clip {i:5d}  mean band energy {fx.mean.mean():+.3f}  std {fx.std.mean():.3f}  "
                f"{(time.perf_counter() - t0) / (i + 1) * 1e3:.1f} ms/clip"
            )
    print("feature shapes:", shapes)


if __name__ == "__main__":
    main()
