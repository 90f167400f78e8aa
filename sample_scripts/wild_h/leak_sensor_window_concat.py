# expect: leak
# holder: window|monitor
# pattern: plain numpy vibration-monitoring service: a producer thread pushes (channels, samples) float32 chunks through a bounded queue.Queue; the consumer keeps self.window = np.concatenate([self.window, chunk], axis=1) and trims with `if len(self.window) > self.max_samples`, but len() of a (16, T) array is the channel count, so the trim never fires and the window grows by one chunk per step
# step_ms: 10
"""Streaming vibration monitor for a 16-channel accelerometer rig.

An acquisition thread reads blocks of 256 samples per channel (simulated
here: rotating-machinery harmonics, broadband noise and occasional bearing
fault bursts) and hands them to the analysis loop through a bounded queue.

The analysis loop keeps a sliding window of the most recent samples,
computes band powers of the last 2048 samples with an FFT, and scores each
block against running statistics (Welford) of the band powers to flag
anomalies.
"""
import queue
import threading
import time

import numpy as np

FS = 25_600
CHANNELS = 16
BLOCK = 256
N_BLOCKS = 2600
FFT_LEN = 2048
BANDS = [(10, 200), (200, 1000), (1000, 3000), (3000, 8000), (8000, 12800)]


class Acquisition(threading.Thread):
    def __init__(self, out_q, n_blocks, seed=0):
        super().__init__(daemon=True)
        self.q = out_q
        self.n_blocks = n_blocks
        self.rng = np.random.default_rng(seed)
        self.t = 0

    def run(self):
        f_rot = 29.5
        harmonics = np.array([1, 2, 3, 5.3, 8.1])[:, None]
        gains = self.rng.uniform(0.5, 1.5, (CHANNELS, 1)).astype(np.float32)
        for b in range(self.n_blocks):
            tt = (self.t + np.arange(BLOCK)) / FS
            sig = np.sin(2 * np.pi * f_rot * harmonics * tt).sum(0).astype(np.float32)
            block = gains * sig + 0.3 * self.rng.standard_normal((CHANNELS, BLOCK), dtype=np.float32)
            if self.rng.random() < 0.01:  # bearing fault burst
                ch = self.rng.integers(CHANNELS)
                block[ch] += 4 * np.sin(2 * np.pi * 4200 * tt).astype(np.float32) * np.exp(-tt * 50 % 1)
            self.t += BLOCK
            self.q.put((b, block))
            time.sleep(0.007)
        self.q.put(None)


class VibrationMonitor:
    def __init__(self, max_seconds=2.0):
        self.max_samples = int(max_seconds * FS)
        self.window = np.zeros((CHANNELS, 0), dtype=np.float32)
        freqs = np.fft.rfftfreq(FFT_LEN, 1 / FS)
        self.band_masks = [(freqs >= lo) & (freqs < hi) for lo, hi in BANDS]
        self.hann = np.hanning(FFT_LEN).astype(np.float32)
        self.n = 0
        self.mean = np.zeros((CHANNELS, len(BANDS)))
        self.m2 = np.zeros((CHANNELS, len(BANDS)))

    def push(self, block):
        self.window = np.concatenate([self.window, block], axis=1)
        if len(self.window) > self.max_samples:
            self.window = self.window[:, -self.max_samples:]

    def band_powers(self):
        seg = self.window[:, -FFT_LEN:] * self.hann
        spec = np.abs(np.fft.rfft(seg, axis=1)) ** 2
        return np.log10(np.stack([spec[:, m].sum(1) for m in self.band_masks], 1) + 1e-9)

    def score(self):
        if self.window.shape[1] < FFT_LEN:
            return None
        bp = self.band_powers()
        if self.n > 20:
            std = np.sqrt(self.m2 / (self.n - 1)) + 1e-6
            z = np.abs(bp - self.mean) / std
        else:
            z = np.zeros_like(bp)
        self.n += 1
        delta = bp - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (bp - self.mean)
        return z


def main():
    q = queue.Queue(maxsize=32)
    acq = Acquisition(q, N_BLOCKS)
    monitor = VibrationMonitor()
    acq.start()
    t0 = time.time()
    alarms = 0
    last_print = t0
    while True:
        item = q.get()
        if item is None:
            break
        b, block = item
        monitor.push(block)
        z = monitor.score()
        if z is not None and z.max() > 6:
            alarms += 1
        now = time.time()
        if now - last_print > 1.5:
            last_print = now
            print(f"block {b:5d}  alarms {alarms:3d}  queue {q.qsize():2d}  "
                  f"({now - t0:.1f}s)", flush=True)
    acq.join()
    print(f"done: {N_BLOCKS} blocks, {alarms} alarm blocks, {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
