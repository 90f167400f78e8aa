# expect: no_leak
# pattern: thread-pool audio feature extraction where every worker thread keeps its own scratch arrays in a threading.local dict keyed by (name, shape); clip lengths come from 4 fixed buckets, so each of the 3 threads allocates at most 4 sets of buffers during warm-up and then only reuses them; results are reduced into fixed-size per-class sums
# step_ms: 65
"""Parallel log-mel feature extraction for a keyword-spotting index.

A thread pool turns raw PCM clips into log-mel features.  Every worker thread
keeps its own scratch buffers (per clip-length bucket), so the framing, FFT
and filterbank stages write into preallocated arrays instead of allocating
for each clip.  Pooled features are accumulated into per-keyword centroids.
"""
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

SR = 16000
WIN = 400
HOP = 160
N_FFT = 512
N_MELS = 64
N_KEYWORDS = 10
BUCKETS = (16000, 24000, 32000, 48000)
N_BATCHES = 260
BATCH = 24
N_WORKERS = 3
SEED = 61

_tls = threading.local()


def scratch(name, shape, dtype):
    bufs = getattr(_tls, "bufs", None)
    if bufs is None:
        bufs = _tls.bufs = {}
    key = (name, shape, np.dtype(dtype).str)
    buf = bufs.get(key)
    if buf is None:
        buf = bufs[key] = np.zeros(shape, dtype)
    return buf


def mel_filterbank(n_mels, n_fft, sr):
    def hz_to_mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)

    def mel_to_hz(m):
        return 700.0 * (10 ** (m / 2595.0) - 1.0)

    mels = np.linspace(hz_to_mel(20.0), hz_to_mel(sr / 2), n_mels + 2)
    bins = np.floor((n_fft + 1) * mel_to_hz(mels) / sr).astype(int)
    fb = np.zeros((n_fft // 2 + 1, n_mels), np.float32)
    for m in range(1, n_mels + 1):
        lo, mid, hi = bins[m - 1], bins[m], bins[m + 1]
        for k in range(lo, mid):
            fb[k, m - 1] = (k - lo) / max(mid - lo, 1)
        for k in range(mid, hi):
            fb[k, m - 1] = (hi - k) / max(hi - mid, 1)
    return fb


MEL_FB = mel_filterbank(N_MELS, N_FFT, SR)
WINDOW = np.hanning(WIN).astype(np.float32)
KEYWORD_F0 = np.linspace(180.0, 900.0, N_KEYWORDS)


def synth_clip(clip_id):
    rng = np.random.default_rng(clip_id)
    label = int(rng.integers(N_KEYWORDS))
    n = int(rng.choice(BUCKETS))
    t = np.arange(n, dtype=np.float32) / SR
    f0 = KEYWORD_F0[label] * (1.0 + 0.05 * rng.standard_normal())
    env = np.exp(-((t - t[-1] / 2) ** 2) / (2 * (0.2 + 0.1 * rng.random()) ** 2))
    clip = env * (np.sin(2 * np.pi * f0 * t) + 0.5 * np.sin(4 * np.pi * f0 * t))
    clip += 0.05 * rng.standard_normal(n)
    return label, clip.astype(np.float32)


def logmel(clip):
    n_frames = 1 + (len(clip) - WIN) // HOP
    frames = scratch("frames", (n_frames, N_FFT), np.float32)
    spec = scratch("spec", (n_frames, N_FFT // 2 + 1), np.complex64)
    power = scratch("power", (n_frames, N_FFT // 2 + 1), np.float32)
    mel = scratch("mel", (n_frames, N_MELS), np.float32)

    view = np.lib.stride_tricks.sliding_window_view(clip, WIN)[::HOP][:n_frames]
    np.multiply(view, WINDOW, out=frames[:, :WIN])
    np.fft.rfft(frames, n=N_FFT, axis=1, out=spec)
    np.abs(spec, out=power)
    np.square(power, out=power)
    np.matmul(power, MEL_FB, out=mel)
    np.add(mel, 1e-6, out=mel)
    np.log(mel, out=mel)
    return np.concatenate([mel.mean(axis=0), mel.std(axis=0)])


def process(clip_id):
    label, clip = synth_clip(clip_id)
    return label, logmel(clip)


def main():
    sums = np.zeros((N_KEYWORDS, 2 * N_MELS), np.float64)
    sq_sums = np.zeros_like(sums)
    counts = np.zeros(N_KEYWORDS, np.int64)

    start = last = time.perf_counter()
    with ThreadPoolExecutor(N_WORKERS, thread_name_prefix="fbank") as pool:
        for b in range(N_BATCHES):
            ids = range(SEED * 100_000 + b * BATCH, SEED * 100_000 + (b + 1) * BATCH)
            for label, feat in pool.map(process, ids):
                sums[label] += feat
                sq_sums[label] += feat * feat
                counts[label] += 1

            now = time.perf_counter()
            if now - last >= 1.0:
                c = np.maximum(counts, 1)[:, None]
                spread = np.sqrt(np.maximum(sq_sums / c - (sums / c) ** 2, 0)).mean()
                print(f"[{now - start:5.1f}s] batch {b + 1}/{N_BATCHES} clips={counts.sum()} "
                      f"rate={counts.sum() / (now - start):.0f}/s mean_spread={spread:.3f}",
                      flush=True)
                last = now

    centroids = sums / np.maximum(counts, 1)[:, None]
    dists = np.linalg.norm(centroids[:, None] - centroids[None], axis=-1)
    off_diag = dists[~np.eye(N_KEYWORDS, dtype=bool)]
    print(f"done: {counts.sum()} clips in {time.perf_counter() - start:.1f}s; "
          f"min centroid distance {off_diag.min():.3f}")


if __name__ == "__main__":
    main()
