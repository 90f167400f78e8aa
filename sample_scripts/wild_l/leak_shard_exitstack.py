# expect: leak
# holder: stack|exit_stack|_exit_callbacks|ExitStack
# pattern: numpy streaming-statistics job over binary sensor shards in a temp dir; one ExitStack spans the whole run and every shard is opened with stack.enter_context(open_shard(path)), so each generator-based context manager stays suspended at its yield (holding the decoded shard array and an open file) until the job ends
# step_ms: 45
"""Compute robust per-channel statistics over a directory of sensor shards.

Shards are written by an upstream logger as a small JSON header followed by
raw little-endian float32 samples. This job streams over them, maintains
running moments and a coarse histogram per channel, and flags shards whose
spectrum looks off.
"""
import contextlib
import json
import os
import shutil
import struct
import tempfile
import time

import numpy as np

N_CHANNELS = 12
SAMPLES_PER_SHARD = 4000
N_SHARDS = 360
HIST_EDGES = np.linspace(-8, 8, 129)
MEDIAN_WIN = 51


def write_shards(root, rng, n):
    paths = []
    t = np.arange(SAMPLES_PER_SHARD) / 1000.0
    for i in range(n):
        drift = rng.normal(0, 0.2, size=(N_CHANNELS, 1))
        f = rng.uniform(5, 60, size=(N_CHANNELS, 1))
        data = np.sin(2 * np.pi * f * t) + drift + rng.normal(0, 0.5, size=(N_CHANNELS, SAMPLES_PER_SHARD))
        if rng.random() < 0.05:  # a dead sensor only reports noise
            data[rng.integers(N_CHANNELS)] = rng.normal(0, 1.0, size=SAMPLES_PER_SHARD)
        hits = rng.integers(0, data.size, size=rng.poisson(3))
        data.flat[hits] += rng.choice([-1, 1], size=len(hits)) * rng.uniform(5, 10, size=len(hits))
        header = json.dumps({"shard": i, "channels": N_CHANNELS, "samples": SAMPLES_PER_SHARD,
                             "rate_hz": 1000, "dtype": "<f4"}).encode()
        path = os.path.join(root, f"shard_{i:05d}.bin")
        with open(path, "wb") as fh:
            fh.write(struct.pack("<I", len(header)))
            fh.write(header)
            fh.write(data.astype("<f4").tobytes())
        paths.append(path)
    return paths


@contextlib.contextmanager
def open_shard(path):
    fh = open(path, "rb")
    try:
        (hlen,) = struct.unpack("<I", fh.read(4))
        header = json.loads(fh.read(hlen))
        raw = np.frombuffer(fh.read(), dtype=header["dtype"])
        data = raw.reshape(header["channels"], header["samples"]).astype(np.float64)
        yield header, data
    finally:
        fh.close()


class RunningStats:
    def __init__(self, n_channels):
        self.n = 0
        self.mean = np.zeros(n_channels)
        self.m2 = np.zeros(n_channels)
        self.hist = np.zeros((n_channels, len(HIST_EDGES) - 1), dtype=np.int64)

    def update(self, x):
        n_b = x.shape[1]
        mean_b = x.mean(1)
        m2_b = ((x - mean_b[:, None]) ** 2).sum(1)
        delta = mean_b - self.mean
        tot = self.n + n_b
        self.mean += delta * n_b / tot
        self.m2 += m2_b + delta ** 2 * self.n * n_b / tot
        self.n = tot
        for c in range(x.shape[0]):
            self.hist[c] += np.histogram(x[c], bins=HIST_EDGES)[0]

    @property
    def std(self):
        return np.sqrt(self.m2 / max(self.n - 1, 1))


def spectral_flatness(x):
    spec = np.abs(np.fft.rfft(x * np.hanning(x.shape[1]), axis=1)) ** 2 + 1e-12
    return np.exp(np.log(spec).mean(1)) / spec.mean(1)


def main():
    rng = np.random.default_rng(11)
    workdir = tempfile.mkdtemp(prefix="shards_")
    try:
        paths = write_shards(workdir, rng, N_SHARDS)
        stats = RunningStats(N_CHANNELS)
        flagged = []
        t0 = time.time()
        with contextlib.ExitStack() as stack:
            for i, path in enumerate(paths):
                header, data = stack.enter_context(open_shard(path))
                detrended = data - np.median(data, axis=1, keepdims=True)
                stats.update(detrended)
                flat = spectral_flatness(detrended)
                if (flat > 0.5).any():
                    flagged.append(header["shard"])
                # spike detection against a rolling-median baseline
                padded = np.pad(detrended, ((0, 0), (MEDIAN_WIN // 2, MEDIAN_WIN // 2)), mode="edge")
                windows = np.lib.stride_tricks.sliding_window_view(padded, MEDIAN_WIN, axis=1)
                baseline = np.median(windows, axis=2)
                resid = detrended - baseline
                spikes = int((np.abs(resid) > 4 * stats.std[:, None]).sum())
                # cross-channel coherence on 256-sample segments
                seg = np.lib.stride_tricks.sliding_window_view(detrended, 256, axis=1)[:, ::128]
                spec = np.fft.rfft(seg * np.hanning(256), axis=2)
                cross = np.einsum("isf,jsf->ijf", spec, spec.conj()).mean(2)
                coherent_pairs = int((np.abs(cross) / np.sqrt(np.outer(np.diag(cross).real, np.diag(cross).real)) > 0.3).sum() - N_CHANNELS)
                if i % 50 == 49:
                    print(f"shard {i + 1}/{len(paths)} std={stats.std.mean():.3f} "
                          f"flagged={len(flagged)} spikes={spikes} coherent={coherent_pairs} t={time.time() - t0:.1f}s", flush=True)
        print("per-channel std:", np.round(stats.std, 3))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
