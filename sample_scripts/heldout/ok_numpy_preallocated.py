# expect: no_leak
# pattern: NumPy feature extraction with preallocated, reused buffers (no torch, no optimizer)
# step_ms: 3.5
"""Log-spectrogram feature extraction for a keyword-spotting dataset, pure
NumPy -- the tidy version of leak_numpy_feature_debug.py: the frame matrix,
the spectrum and the feature block are preallocated once and written in place
(``out=``) for every clip; running statistics are O(bands). The features of
the last clip are handed to a consumer and overwritten by the next one.

Memory: flat after the first clip.
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
    ir = rng.standard_normal(taps).astype(np.float32) * np.exp(-np.arange(taps) / (taps / 6))
    ir[0] = 1.0
    wet = np.convolve(clip, ir)[: len(clip)]
    return (wet / (np.abs(wet).max() + 1e-6)).astype(np.float32)


class Featurizer:
    def __init__(self, clip_len, n_fft=256, hop=64, n_bands=40):
        self.n_frames = 1 + (clip_len - n_fft) // hop
        self.idx = np.arange(n_fft)[None, :] + hop * np.arange(self.n_frames)[:, None]
        self.window = np.hanning(n_fft).astype(np.float32)
        n_bins = n_fft // 2 + 1
        edges = np.linspace(0, n_bins, n_bands + 2).astype(int)
        self.fb = np.zeros((n_bands, n_bins), dtype=np.float32)
        for b in range(n_bands):
            lo, mid, hi = edges[b], edges[b + 1], edges[b + 2]
            self.fb[b, lo:mid] = np.linspace(0, 1, mid - lo, endpoint=False)
            self.fb[b, mid:hi] = np.linspace(1, 0, hi - mid, endpoint=False)
        # preallocated work buffers
        self.frames = np.empty((self.n_frames, n_fft), dtype=np.float32)
        self.power = np.empty((self.n_frames, n_bins), dtype=np.float32)
        self.feats = np.empty((self.n_frames, n_bands), dtype=np.float32)
        self.sum = np.zeros(n_bands)
        self.sumsq = np.zeros(n_bands)
        self.count = 0

    def __call__(self, clip):
        np.take(clip, self.idx, out=self.frames)
        self.frames *= self.window
        spec = np.fft.rfft(self.frames, axis=1)
        np.abs(spec, out=self.power)
        np.square(self.power, out=self.power)
        np.matmul(self.power, self.fb.T, out=self.feats)
        self.feats += 1e-6
        np.log(self.feats, out=self.feats)
        self.sum += self.feats.sum(0)
        self.sumsq += np.square(self.feats).sum(0)
        self.count += self.n_frames
        return self.feats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clips", type=int, default=3500)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    fx = Featurizer(SR)
    checksum = 0.0
    t0 = time.perf_counter()
    for i in range(args.clips):
        feats = fx(add_reverb(synth_clip(rng), rng))
        checksum += float(feats[::16, ::8].sum())
        if i % 500 == 0:
            mean = fx.sum / fx.count
            print(
                f"clip {i:5d}  mean {mean.mean():+.3f}  checksum {checksum:.1f}  "
                f"{(time.perf_counter() - t0) / (i + 1) * 1e3:.1f} ms/clip"
            )


if __name__ == "__main__":
    main()
