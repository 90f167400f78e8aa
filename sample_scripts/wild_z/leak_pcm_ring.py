# expect: leak
# holder: FlightRecorder._buf|recorder._buf|_buf
# pattern: keyword-spotting data-preparation service fed by a 4-microphone array stream (NumPy/SciPy only, no torch; one step = one 100 ms chunk of 16 kHz 4-channel int16 PCM: delay-and-sum beamforming, log-mel features, energy VAD, GCC-PHAT direction-of-arrival, five augmented copies (gain, noise mix, short reverb, speed perturbation), ~3 ms per chunk, code in main() + a FlightRecorder and a FeatureExtractor class). FlightRecorder keeps the last 20 s of raw PCM in a preallocated bytearray ring so that clipped or suspicious segments can be dumped with context into a temp dir. Its write() computes data = chunk.tobytes() and, in the common (no wrap-around) branch, assigns self._buf[pos:pos + len(chunk)] = data: len(chunk) is the number of frames (1600) while data is 12800 bytes, and slice assignment on a bytearray silently resizes it, so every write inserts 11200 extra bytes instead of overwriting; positions still wrap at the original capacity, so the ring "works", but the bytearray grows by ~11 KB per chunk for the whole run (and every later insert has to memmove the ever longer tail).
# step_ms: 3
"""Streaming KWS data preparation from a 4-mic array.

For every 100 ms chunk: beamform, compute 40 log-mel bands, run an energy
VAD, estimate the talker direction with GCC-PHAT, produce five augmented feature variants for the training shards and
keep the raw audio in a flight recorder so odd segments can be dumped
with 2 s of context.
"""
import os
import tempfile
import time
import wave

import numpy as np
import psutil
from scipy.signal import fftconvolve, resample_poly

RATE = 16_000
CHANNELS = 4
CHUNK = 1600          # 100 ms
N_CHUNKS = 6000
N_FFT = 512
HOP = 160
N_MELS = 40


def rss_mb():
    return psutil.Process(os.getpid()).memory_info().rss / 2**20


class FlightRecorder:
    """The most recent `seconds` of raw multichannel PCM in a byte ring."""

    def __init__(self, seconds, rate=RATE, channels=CHANNELS):
        self.frame_bytes = 2 * channels
        self.capacity = int(seconds * rate) * self.frame_bytes
        self._buf = bytearray(self.capacity)
        self._pos = 0
        self._written = 0

    def write(self, chunk):
        """Append a (frames, channels) int16 block, overwriting the oldest audio."""
        pos = self._pos
        data = chunk.tobytes()
        if pos + len(data) <= self.capacity:
            self._buf[pos:pos + len(chunk)] = data
        else:
            split = self.capacity - pos
            self._buf[pos:self.capacity] = data[:split]
            self._buf[0:len(data) - split] = data[split:]
        self._pos = (pos + len(data)) % self.capacity
        self._written += len(data)

    def last(self, seconds):
        n = min(int(seconds * RATE) * self.frame_bytes, self._written, self.capacity)
        start = self._pos - n
        if start >= 0:
            return bytes(self._buf[start:self._pos])
        return bytes(self._buf[start + self.capacity:self.capacity]) + bytes(self._buf[:self._pos])

    def dump(self, path, seconds):
        raw = self.last(seconds)
        with wave.open(path, "wb") as w:
            w.setnchannels(CHANNELS)
            w.setsampwidth(2)
            w.setframerate(RATE)
            w.writeframes(raw)


def mel_filterbank(n_mels=N_MELS, n_fft=N_FFT, rate=RATE):
    mel = lambda f: 2595 * np.log10(1 + f / 700.0)
    inv = lambda m: 700 * (10 ** (m / 2595.0) - 1)
    pts = inv(np.linspace(mel(20), mel(rate / 2), n_mels + 2))
    bins = np.floor((n_fft + 1) * pts / rate).astype(int)
    fb = np.zeros((n_mels, n_fft // 2 + 1), np.float32)
    for i in range(n_mels):
        l, c, r = bins[i], bins[i + 1], bins[i + 2]
        fb[i, l:c] = (np.arange(l, c) - l) / max(c - l, 1)
        fb[i, c:r] = (r - np.arange(c, r)) / max(r - c, 1)
    return fb


class FeatureExtractor:
    def __init__(self, rng):
        self.fb = mel_filterbank()
        self.window = np.hanning(N_FFT).astype(np.float32)
        self.tail = np.zeros(N_FFT - HOP, np.float32)
        self.rng = rng
        self.rirs = [np.exp(-np.arange(800) / d) * rng.normal(size=800) for d in (60, 120, 240)]
        self.noise_floor = 1e-3

    def logmel(self, mono):
        x = np.concatenate([self.tail, mono])
        self.tail = x[-(N_FFT - HOP):]
        idx = np.arange(0, len(x) - N_FFT + 1, HOP)[:, None] + np.arange(N_FFT)
        spec = np.abs(np.fft.rfft(x[idx] * self.window, axis=1)) ** 2
        return np.log(spec @ self.fb.T + 1e-6)

    def augment(self, mono):
        gain = 10 ** (self.rng.uniform(-6, 6) / 20)
        noisy = mono * gain + self.rng.normal(0, 0.01, size=mono.shape)
        rir = self.rirs[int(self.rng.integers(len(self.rirs)))]
        reverb = fftconvolve(mono, rir, mode="full")[: len(mono)] * 0.05
        fast = resample_poly(mono, 10, 11)           # speed perturbation 1.1x
        fast = np.pad(fast, (0, len(mono) - len(fast)))
        slow = resample_poly(mono, 10, 9)[: len(mono)]  # 0.9x (cropped)
        return [self.logmel_stateless(v) for v in (mono * gain, noisy, reverb, fast, slow)]

    def logmel_stateless(self, mono):
        mono = np.pad(mono, (N_FFT - HOP, 0))
        idx = np.arange(0, len(mono) - N_FFT + 1, HOP)[:, None] + np.arange(N_FFT)
        spec = np.abs(np.fft.rfft(mono[idx] * self.window, axis=1)) ** 2
        return np.log(spec @ self.fb.T + 1e-6)


def gcc_phat_doa(x, n_fft=4096, max_lag=8):
    """Pairwise GCC-PHAT time differences of arrival (in samples)."""
    spec = np.fft.rfft(x.T, n=n_fft, axis=1)
    lags = []
    for i in range(x.shape[1]):
        for j in range(i + 1, x.shape[1]):
            cross = spec[i] * np.conj(spec[j])
            cc = np.fft.irfft(cross / (np.abs(cross) + 1e-9), n=n_fft)
            cc = np.concatenate([cc[-max_lag:], cc[: max_lag + 1]])
            lags.append(int(np.argmax(cc)) - max_lag)
    return np.array(lags)


class MicArraySource:
    """Synthetic 4-mic stream: voiced bursts from a moving talker + room noise."""

    def __init__(self, rng):
        self.rng = rng
        self.t = 0
        self.delays = np.array([0, 2, 4, 6])

    def next_chunk(self):
        n = CHUNK + 8
        t = (self.t + np.arange(n)) / RATE
        self.t += CHUNK
        talking = (np.sin(2 * np.pi * 0.23 * t[0]) > -0.2)
        f0 = 110 + 40 * np.sin(2 * np.pi * 0.7 * t)
        voice = sum(np.sin(2 * np.pi * k * np.cumsum(f0) / RATE) / k for k in range(1, 6))
        voice *= 0.3 * talking * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t) ** 2)
        if self.rng.random() < 0.01:
            voice *= 8.0  # somebody shouts right into the array -> clipping
        out = np.empty((CHUNK, CHANNELS), np.float32)
        for ch, d in enumerate(self.delays):
            out[:, ch] = voice[8 - d: 8 - d + CHUNK] + self.rng.normal(0, 0.02, CHUNK)
        return np.clip(out * 32767, -32768, 32767).astype(np.int16)


def main():
    rng = np.random.default_rng(31337)
    src = MicArraySource(rng)
    fx = FeatureExtractor(rng)
    recorder = FlightRecorder(seconds=20)
    shard_feats = []
    tdoa_hist = np.zeros((17, 6), np.int64)
    n_voiced = n_dumps = 0
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        print(f"streaming {N_CHUNKS} chunks of {CHUNK} frames x {CHANNELS} ch; "
              f"rss at loop start {rss_mb():.1f} MB", flush=True)
        for step in range(N_CHUNKS):
            pcm = src.next_chunk()
            recorder.write(pcm)
            x = pcm.astype(np.float32) / 32768.0
            mono = np.mean([np.roll(x[:, ch], -d) for ch, d in enumerate(src.delays)], axis=0)
            feats = fx.logmel(mono)
            tdoa = gcc_phat_doa(x)
            energy = float(np.mean(mono ** 2))
            voiced = energy > 20 * fx.noise_floor
            if not voiced:
                fx.noise_floor = 0.95 * fx.noise_floor + 0.05 * energy
            else:
                n_voiced += 1
                tdoa_hist[np.clip(tdoa + 8, 0, 16), np.arange(len(tdoa))] += 1
                shard_feats.extend(fx.augment(mono))
                shard_feats.append(feats)
            clipped = np.mean(np.abs(pcm) >= 32767) > 0.001
            if clipped and step > 20:
                name = os.path.join(tmp, f"clip_{n_dumps % 16:02d}.wav")
                recorder.dump(name, seconds=2.0)
                n_dumps += 1
            if len(shard_feats) >= 256:
                shard = np.stack(shard_feats).astype(np.float16)
                np.save(os.path.join(tmp, "shard_current.npy"), shard)
                shard_feats.clear()
            if (step + 1) % 1000 == 0:
                el = time.perf_counter() - t0
                print(f"  chunk {step + 1:5d}  voiced {n_voiced:5d}  dumps {n_dumps:3d}  "
                      f"{el / (step + 1) * 1e3:.2f} ms/chunk  rss {rss_mb():.1f} MB", flush=True)
        print(f"loop done; rss at loop end {rss_mb():.1f} MB", flush=True)


if __name__ == "__main__":
    main()
