# expect: leak
# holder: DeviceStatus._value2member_map_|DeviceStatus|enum pseudo-members
# pattern: NumPy + stdlib fleet telemetry decoder (no torch, no optimizer, ~2 ms per gateway batch of 24 binary frames with a 2048-sample vibration snippet each, band energies by rfft, code in main() + a TelemetryDecoder class); every frame's 32-bit status word is turned into an enum.IntFlag with DeviceStatus(word) so the decoder can test alarm bits and read the firmware heartbeat through a property; the upper 24 bits of the word are a per-device heartbeat counter (random start after boot) that increments with every frame, and IntFlag (boundary KEEP, Python 3.11) builds a pseudo-member for every never-seen value and caches it forever in the class-level DeviceStatus._value2member_map_, so the enum class gains one ~450-byte member object per frame for the whole run while every container of the decoder itself stays bounded
# step_ms: 2
"""Fleet telemetry decoder.

Gateways forward fixed-size binary frames from field devices (pumps,
compressors, chillers).  Each frame carries the device id, a sequence
number, the firmware status word, twelve float32 process channels and a
short int16 accelerometer snippet.  The decoder keeps per-device running
statistics and vibration band energies, counts alarm bits per device
class and keeps a short list of recent alarms for the on-call dashboard.

Status word layout (firmware spec v3):

    bits  0-7   alarm / state bits (see DeviceStatus)
    bits  8-31  heartbeat counter (incremented by the firmware per frame,
                starts at a random value after every boot)
"""
from __future__ import annotations

import argparse
import enum
import logging
import struct
import time
from collections import Counter, deque
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger("fleet.decoder")

N_CHANNELS = 12
N_VIB = 2048
FRAME = np.dtype([
    ("device", "<u2"), ("seq", "<u4"), ("status", "<u4"), ("ts", "<f4"),
    ("channels", "<f4", (N_CHANNELS,)), ("vib", "<i2", (N_VIB,)),
])
HEADER = struct.Struct("<4sHH")  # magic, version, n_frames
BAND_EDGES = np.array([0, 16, 48, 96, 192, 384, 640, 1025])


class DeviceStatus(enum.IntFlag):
    RUNNING = 0x01
    MAINTENANCE = 0x02
    OVERTEMP = 0x04
    OVERPRESSURE = 0x08
    LOW_FLOW = 0x10
    SENSOR_FAULT = 0x20
    COMMS_DEGRADED = 0x40
    WATCHDOG_RESET = 0x80

    @property
    def heartbeat(self) -> int:
        return int(self) >> 8

    @property
    def alarms(self) -> "DeviceStatus":
        return self & ALARM_MASK


ALARM_MASK = (DeviceStatus.OVERTEMP | DeviceStatus.OVERPRESSURE | DeviceStatus.LOW_FLOW
              | DeviceStatus.SENSOR_FAULT | DeviceStatus.WATCHDOG_RESET)


class DeviceClass(enum.Enum):
    PUMP = "pump"
    COMPRESSOR = "compressor"
    CHILLER = "chiller"


@dataclass
class DeviceStats:
    n: int = 0
    mean: np.ndarray = field(default_factory=lambda: np.zeros(N_CHANNELS))
    m2: np.ndarray = field(default_factory=lambda: np.zeros(N_CHANNELS))
    band_energy: np.ndarray = field(default_factory=lambda: np.zeros(len(BAND_EDGES) - 1))
    last_seq: int = -1
    last_heartbeat: int = -1
    gaps: int = 0
    stale_heartbeats: int = 0

    def update(self, x: np.ndarray) -> None:
        self.n += 1
        d = x - self.mean
        self.mean += d / self.n
        self.m2 += d * (x - self.mean)


@dataclass
class AlarmEvent:
    device: int
    seq: int
    flags: str
    channels: tuple


class GatewaySimulator:
    """Produces gateway batches as raw bytes, like the UDP listener would."""

    def __init__(self, n_devices: int, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.n_devices = n_devices
        self.seq = np.zeros(n_devices, dtype=np.int64)
        self.heartbeat = self.rng.integers(0, 1 << 24, n_devices)
        self.base = self.rng.normal(50.0, 10.0, (n_devices, N_CHANNELS)).astype(np.float32)
        self.t = 0.0

    def batch(self, n_frames: int) -> bytes:
        rec = np.zeros(n_frames, dtype=FRAME)
        devs = self.rng.integers(0, self.n_devices, n_frames)
        u = self.rng.random((n_frames, 4))
        for i, d in enumerate(devs):
            self.seq[d] += 1
            self.heartbeat[d] = (self.heartbeat[d] + 1) & 0xFFFFFF
            bits = 0x01
            if u[i, 0] < 0.02:
                bits |= 0x04
            if u[i, 1] < 0.01:
                bits |= 0x10
            if u[i, 2] < 0.005:
                bits |= 0x20
            if u[i, 3] < 0.03:
                bits |= 0x40
            rec["status"][i] = (int(self.heartbeat[d]) << 8) | bits
            rec["seq"][i] = self.seq[d]
        rec["device"] = devs
        rec["ts"] = self.t + 0.001 * np.arange(n_frames)
        rec["channels"] = self.base[devs] + self.rng.normal(0.0, 1.5, (n_frames, N_CHANNELS))
        tt = np.arange(N_VIB) / 4096.0
        f0 = 50.0 + (devs % 7)[:, None] * 15.0
        vib = 900 * np.sin(2 * np.pi * f0 * tt) + self.rng.normal(0, 300, (n_frames, N_VIB))
        rec["vib"] = vib.astype(np.int16)
        self.t += 0.001 * n_frames
        return HEADER.pack(b"GWB1", 3, n_frames) + rec.tobytes()


class TelemetryDecoder:
    def __init__(self, n_devices: int) -> None:
        self.stats: dict[int, DeviceStats] = {}
        self.device_class = {d: list(DeviceClass)[d % 3] for d in range(n_devices)}
        self.alarm_counts: Counter = Counter()
        self.recent_alarms: deque[AlarmEvent] = deque(maxlen=200)
        self.frames = 0
        self.window = np.hanning(N_VIB).astype(np.float32)

    def feed(self, payload: bytes) -> int:
        magic, version, n = HEADER.unpack_from(payload)
        if magic != b"GWB1" or version != 3:
            raise ValueError(f"unexpected gateway header {magic!r} v{version}")
        rec = np.frombuffer(payload, dtype=FRAME, count=n, offset=HEADER.size)
        spec = np.abs(np.fft.rfft(rec["vib"].astype(np.float32) * self.window, axis=1)) ** 2
        bands = np.add.reduceat(spec, BAND_EDGES[:-1], axis=1)
        bands = np.log1p(bands / N_VIB)
        channels = rec["channels"].astype(np.float64)
        n_alarms = 0
        for i, (dev, seq, word) in enumerate(zip(rec["device"].tolist(), rec["seq"].tolist(),
                                                  rec["status"].tolist())):
            status = DeviceStatus(word)
            st = self.stats.get(dev)
            if st is None:
                st = self.stats[dev] = DeviceStats()
            if st.last_seq >= 0 and seq != st.last_seq + 1:
                st.gaps += 1
            st.last_seq = seq
            if status.heartbeat == st.last_heartbeat:
                st.stale_heartbeats += 1
            st.last_heartbeat = status.heartbeat
            st.update(channels[i])
            st.band_energy += 0.05 * (bands[i] - st.band_energy)
            alarms = status.alarms
            if alarms:
                n_alarms += 1
                cls = self.device_class[dev]
                for flag in alarms:
                    self.alarm_counts[(cls, flag.name)] += 1
                self.recent_alarms.append(
                    AlarmEvent(dev, seq, str(alarms.name), tuple(np.round(channels[i, :4], 2).tolist())))
            self.frames += 1
        return n_alarms

    def summary(self) -> dict:
        drift = [float(np.sqrt(s.m2 / max(s.n - 1, 1)).mean()) for s in self.stats.values()]
        return {
            "devices": len(self.stats),
            "frames": self.frames,
            "gaps": sum(s.gaps for s in self.stats.values()),
            "mean_std": float(np.mean(drift)) if drift else 0.0,
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=11000)
    ap.add_argument("--frames-per-batch", type=int, default=24)
    ap.add_argument("--devices", type=int, default=400)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    sim = GatewaySimulator(args.devices, args.seed)
    dec = TelemetryDecoder(args.devices)
    t0 = time.perf_counter()
    last = t0
    total_alarms = 0
    for b in range(1, args.batches + 1):
        total_alarms += dec.feed(sim.batch(args.frames_per_batch))
        now = time.perf_counter()
        if now - last > 3.0 or b == args.batches:
            s = dec.summary()
            log.info("batch %d/%d frames=%d alarms=%d gaps=%d mean_std=%.3f (%.1f ms/batch)",
                     b, args.batches, s["frames"], total_alarms, s["gaps"], s["mean_std"],
                     1000 * (now - t0) / b)
            last = now
    top = dec.alarm_counts.most_common(5)
    log.info("top alarm kinds: %s", ", ".join(f"{c.value}/{n}={k}" for (c, n), k in top))


if __name__ == "__main__":
    main()
