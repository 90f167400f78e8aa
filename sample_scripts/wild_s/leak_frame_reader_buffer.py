# expect: leak
# holder: iter_frames.buf|buf|frames.gi_frame.f_locals['buf']
# pattern: NumPy-only wind-farm condition monitoring (no torch, no optimizer; per-turbine recursive-least-squares power-curve models updated by hand): a binary telemetry stream arrives in fixed 64 KB socket reads and the generator iter_frames() accumulates them in a local bytearray `buf`, parses length-prefixed frames at a read cursor `pos`, and only discards consumed bytes with `if pos == len(buf): buf.clear(); pos = 0`; because reads never end exactly on a frame boundary (frames are variable-length), the condition is practically never true, so the suspended generator's buffer keeps every byte ever received (~15.5 KB per vibration frame: 24 SCADA floats + 3x1280 float32 samples) for the whole run
# step_ms: 1
"""Condition monitoring for a small wind farm.

A (simulated) gateway multiplexes the turbines' telemetry into one binary
stream: length-prefixed frames of either SCADA + 3-axis nacelle vibration
snapshots or short status heartbeats. The stream is read in fixed-size socket
reads, de-framed, decoded and fed to one recursive-least-squares power-curve
model per turbine; large standardised residuals or vibration band energies
raise alerts.
"""
import contextlib
import functools
import logging
import struct
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Tuple

import numpy as np
from scipy import signal

log = logging.getLogger("windfarm.cm")

MAGIC = 0xA55A
HEADER = struct.Struct("<HBBIdI")   # magic, type, turbine, seq, timestamp, payload length
FT_VIBRATION = 1
FT_STATUS = 2


@dataclass
class FarmConfig:
    n_turbines: int = 8
    vib_samples: int = 1280
    vib_fs: float = 2560.0
    scada_channels: int = 24
    status_every: int = 5
    read_size: int = 65536
    n_frames: int = 17000
    seed: int = 5


@dataclass
class ModelConfig:
    forgetting: float = 0.999
    delta: float = 50.0
    z_alert: float = 4.5
    ewma: float = 0.01
    bands: Tuple[Tuple[float, float], ...] = ((5, 40), (40, 120), (120, 300), (300, 600), (600, 1200))
    demod_bands: Tuple[Tuple[float, float], ...] = ((300.0, 800.0), (700.0, 1200.0))


# ----------------------------------------------------------------- gateway simulation

def encode_frame(ftype, turbine, seq, ts, payload: bytes) -> bytes:
    return HEADER.pack(MAGIC, ftype, turbine, seq, ts, len(payload)) + payload


def gateway(cfg: FarmConfig) -> Iterator[bytes]:
    """Produces the multiplexed byte stream, handed out in fixed-size reads."""
    rng = np.random.default_rng(cfg.seed)
    t = np.arange(cfg.vib_samples) / cfg.vib_fs
    rated = rng.uniform(1.9, 2.1, cfg.n_turbines)
    pending = bytearray()
    seq = 0
    ts = 1.7e9
    while seq < cfg.n_frames:
        turbine = seq % cfg.n_turbines
        wind = max(0.0, 8.0 + 3.0 * np.sin(seq / 900.0) + rng.normal(0, 1.2))
        power = rated[turbine] * np.clip((wind - 3.0) / 9.0, 0, 1) ** 3 + rng.normal(0, 0.03)
        if turbine == 6 and seq > cfg.n_frames * 0.6:
            power *= 0.85  # degraded blade pitch on T06
        scada = rng.normal(0, 1, cfg.scada_channels).astype(np.float32)
        scada[:4] = (wind, power, 12.0 * min(wind, 11.0) / 11.0, max(0.0, wind - 11.0) * 2.0)
        rpm_hz = scada[2] / 60.0 * 90.0
        vib = (0.3 * np.sin(2 * np.pi * rpm_hz * t)[None, :]
               + 0.05 * np.sin(2 * np.pi * 3 * rpm_hz * t + rng.uniform(0, 6, (3, 1)))
               + 0.02 * rng.standard_normal((3, cfg.vib_samples))).astype(np.float32)
        if turbine == 3 and seq > cfg.n_frames * 0.4:
            vib += 0.04 * np.sin(2 * np.pi * 410.0 * t).astype(np.float32)  # bearing tone
        pending += encode_frame(FT_VIBRATION, turbine, seq, ts, scada.tobytes() + vib.tobytes())
        if seq % cfg.status_every == 0:
            msg = f"T{turbine:02d} ok yaw={rng.uniform(0, 360):.1f} grid={rng.normal(50, 0.02):.3f}"
            pending += encode_frame(FT_STATUS, turbine, seq, ts, msg.encode())
        seq += 1
        ts += 0.05
        while len(pending) >= cfg.read_size:
            yield bytes(pending[:cfg.read_size])
            del pending[:cfg.read_size]
    if pending:
        yield bytes(pending)


# ----------------------------------------------------------------- de-framing / decoding

def iter_frames(reads: Iterator[bytes]) -> Iterator[Tuple[int, int, int, float, memoryview]]:
    buf = bytearray()
    pos = 0
    for chunk in reads:
        buf += chunk
        while len(buf) - pos >= HEADER.size:
            magic, ftype, turbine, seq, ts, n = HEADER.unpack_from(buf, pos)
            if magic != MAGIC:
                raise ValueError(f"lost sync at byte {pos}")
            end = pos + HEADER.size + n
            if end > len(buf):
                break
            payload = bytes(buf[pos + HEADER.size:end])
            pos = end
            yield ftype, turbine, seq, ts, payload
        if pos == len(buf):
            buf.clear()
            pos = 0


DECODERS: Dict[int, Callable] = {}


def decoder(ftype):
    def deco(fn):
        DECODERS[ftype] = fn
        return fn
    return deco


@dataclass
class VibrationFrame:
    turbine: int
    seq: int
    ts: float
    scada: np.ndarray
    vib: np.ndarray


@decoder(FT_VIBRATION)
def decode_vibration(turbine, seq, ts, payload, cfg: FarmConfig):
    scada = np.frombuffer(payload, dtype=np.float32, count=cfg.scada_channels)
    vib = np.frombuffer(payload, dtype=np.float32, offset=4 * cfg.scada_channels).reshape(3, -1)
    return VibrationFrame(turbine, seq, ts, scada, vib)


@decoder(FT_STATUS)
def decode_status(turbine, seq, ts, payload, cfg: FarmConfig):
    return {"turbine": turbine, "seq": seq, "text": payload.decode()}


# ----------------------------------------------------------------- models

@functools.lru_cache(maxsize=4)
def envelope_filter(fs, lo, hi, order=4):
    return signal.butter(order, [lo, hi], btype="bandpass", fs=fs, output="sos")


def envelope_spectrum(vib, fs, lo=300.0, hi=1200.0):
    """Classic bearing diagnostics: band-pass, Hilbert envelope, spectrum of the envelope."""
    x = signal.sosfiltfilt(envelope_filter(fs, lo, hi), vib, axis=1)
    env = np.abs(signal.hilbert(x, axis=1))
    env -= env.mean(axis=1, keepdims=True)
    return np.abs(np.fft.rfft(env * np.hanning(env.shape[1]), axis=1)).mean(0)


def spectral_kurtosis(vib, nperseg=64):
    _, _, z = signal.stft(vib, nperseg=nperseg, axis=1)
    p = np.abs(z) ** 2
    return (p ** 2).mean(-1) / (p.mean(-1) ** 2 + 1e-12) - 2.0


@functools.lru_cache(maxsize=4)
def band_masks(n, fs, bands):
    f = np.fft.rfftfreq(n, 1 / fs)
    return np.stack([(f >= lo) & (f < hi) for lo, hi in bands]).astype(np.float32)


class RLSPowerCurve:
    """Recursive least squares on a cubic wind-speed basis + rotor features."""

    def __init__(self, n_features, mcfg: ModelConfig):
        self.lam = mcfg.forgetting
        self.w = np.zeros(n_features)
        self.P = np.eye(n_features) * mcfg.delta
        self.err_mean = 0.0
        self.err_var = 0.05
        self.alpha = mcfg.ewma
        self.n = 0

    def update(self, x, y):
        Px = self.P @ x
        k = Px / (self.lam + x @ Px)
        err = y - self.w @ x
        self.w += k * err
        self.P = (self.P - np.outer(k, Px)) / self.lam
        z = (err - self.err_mean) / np.sqrt(self.err_var)
        self.err_mean += self.alpha * (err - self.err_mean)
        self.err_var += self.alpha * ((err - self.err_mean) ** 2 - self.err_var)
        self.n += 1
        return err, z


@dataclass
class TurbineState:
    model: RLSPowerCurve
    band_baseline: np.ndarray
    band_var: np.ndarray
    frames: int = 0
    alerts: int = 0


@dataclass
class Monitor:
    cfg: FarmConfig
    mcfg: ModelConfig
    turbines: Dict[int, TurbineState] = field(default_factory=dict)
    recent_alerts: deque = field(default_factory=lambda: deque(maxlen=200))
    status_seen: int = 0
    env_edges: np.ndarray = field(default_factory=lambda: np.array([0, 4, 12, 24, 48, 96, 200]))

    def features(self, fr: VibrationFrame):
        wind, _, rpm, pitch = (float(v) for v in fr.scada[:4])
        spec = np.abs(np.fft.rfft(fr.vib, axis=1)) ** 2
        masks = band_masks(fr.vib.shape[1], self.cfg.vib_fs, self.mcfg.bands)
        env_bins = [np.log10(np.add.reduceat(envelope_spectrum(fr.vib, self.cfg.vib_fs, lo, hi), self.env_edges)
                             + 1e-9) for lo, hi in self.mcfg.demod_bands]
        sk = [spectral_kurtosis(fr.vib, nperseg).max(axis=1) for nperseg in (32, 128)]
        bands = np.concatenate([np.log10(spec.sum(0) @ masks.T + 1e-9), *env_bins, *sk])
        x = np.array([1.0, wind, wind ** 2, wind ** 3 / 100.0, rpm, pitch, *fr.scada[4:8]])
        return x, bands

    def state(self, turbine, n_features, n_bands):
        st = self.turbines.get(turbine)
        if st is None:
            st = TurbineState(RLSPowerCurve(n_features, self.mcfg), np.zeros(n_bands), np.ones(n_bands))
            self.turbines[turbine] = st
        return st

    def process(self, fr: VibrationFrame):
        x, bands = self.features(fr)
        st = self.state(fr.turbine, len(x), len(bands))
        err, z = st.model.update(x, float(fr.scada[1]))
        a = self.mcfg.ewma if st.frames > 50 else 0.2
        dz = (bands - st.band_baseline) / np.sqrt(st.band_var)
        st.band_baseline += a * (bands - st.band_baseline)
        st.band_var += a * ((bands - st.band_baseline) ** 2 - st.band_var)
        st.frames += 1
        if st.frames > 300 and (abs(z) > self.mcfg.z_alert or dz.max() > self.mcfg.z_alert):
            st.alerts += 1
            self.recent_alerts.append((fr.seq, fr.turbine, round(float(z), 2), int(dz.argmax())))


@contextlib.contextmanager
def stage(name):
    t0 = time.perf_counter()
    log.info("%s ...", name)
    yield
    log.info("%s finished in %.1fs", name, time.perf_counter() - t0)


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    cfg, mcfg = FarmConfig(), ModelConfig()
    monitor = Monitor(cfg, mcfg)
    n_vib = 0
    t0 = time.perf_counter()
    with stage("streaming"):
        for ftype, turbine, seq, ts, payload in iter_frames(gateway(cfg)):
            obj = DECODERS[ftype](turbine, seq, ts, payload, cfg)
            if ftype == FT_STATUS:
                monitor.status_seen += 1
                continue
            monitor.process(obj)
            n_vib += 1
            if n_vib % 2000 == 0:
                rate = n_vib / (time.perf_counter() - t0)
                log.info("%6d vibration frames (%.0f/s), %d status, %d alerts so far",
                         n_vib, rate, monitor.status_seen, sum(s.alerts for s in monitor.turbines.values()))
    for tid, st in sorted(monitor.turbines.items()):
        print(f"T{tid:02d}: {st.frames} frames, {st.alerts} alerts, "
              f"power-curve residual sd {np.sqrt(st.model.err_var):.3f}")


if __name__ == "__main__":
    main()
