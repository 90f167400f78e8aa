# expect: leak
# holder: FlightRecorder._buf|recorder._buf|_buf
# pattern: drone "black box" flight recorder (NumPy + struct + memoryview + zlib, no torch; one step = one 250 Hz IMU frame block: simulate 2 IMUs x 6 axes x 128 samples, quantise to int16, run a per-sample Madgwick attitude filter per IMU, struct.pack_into a 4 KB record with header and CRC into a reusable scratch bytearray and append it to the ring, ~0.4 ms per step, code in main() + a FlightRecorder class + an EventDetector); FlightRecorder keeps a preallocated bytearray of 4096 fixed-size slots (16 MB) and writes each record with slice assignment self._buf[off:off + size] = rec; the wrap-around test compares the slot index with len(self._buf), which is in bytes, instead of the slot count, so the index never wraps: once past the last slot the slice assignment silently appends to the bytearray (CPython extends a bytearray when the slice starts at its end), last() keeps returning the right newest records because it computes the slot count from len(self._buf) too, and the "ring" grows by 4 KB per record for the rest of the run
# step_ms: 0.4
"""Black-box flight recorder for a quadcopter.

IMU blocks are packed into fixed-size binary records and kept in an in-memory
ring of the most recent records. An event detector looks at the recent records
every 100 blocks and dumps the window around hard landings / vibration spikes.
"""

import math
import os
import struct
import tempfile
import time
import zlib

import numpy as np

HEADER = struct.Struct("<4sIQdHHfffff")  # magic, crc, seq, t, flags, n, alt, vz, batt, roll, pitch
N_SAMPLES = 128
N_AXES = 12                              # 2 IMUs x (ax, ay, az, gx, gy, gz)
PAYLOAD = N_SAMPLES * N_AXES * 2
RECORD_SIZE = 4096
assert HEADER.size + PAYLOAD <= RECORD_SIZE
N_BLOCKS = 39000
SLOTS = 4096


class FlightRecorder:
    def __init__(self, slots, slot_size=RECORD_SIZE):
        self.slot_size = slot_size
        self._buf = bytearray(slots * slot_size)
        self._slot = 0          # next slot to write
        self.written = 0

    @property
    def capacity(self):
        return len(self._buf) // self.slot_size

    def append(self, rec):
        if self._slot >= len(self._buf):
            self._slot = 0
        off = self._slot * self.slot_size
        self._buf[off:off + self.slot_size] = rec
        self._slot += 1
        self.written += 1

    def last(self, n):
        """Copy of the n newest records, oldest first, as one bytes object."""
        cap = self.capacity
        n = min(n, self.written, cap)
        size = self.slot_size
        parts = []
        with memoryview(self._buf) as mv:
            for i in range(n, 0, -1):
                s = (self._slot - i) % cap
                parts.append(mv[s * size:(s + 1) * size].tobytes())
        return b"".join(parts)


class ImuSim:
    def __init__(self, seed=5):
        self.rng = np.random.default_rng(seed)
        self.t = 0.0
        self.alt = 0.0
        self.vz = 0.0
        self.batt = 16.8
        self.phase = np.zeros(N_AXES)

    def block(self):
        dt = 1.0 / 250.0
        t = self.t + dt * np.arange(N_SAMPLES)
        self.t += dt * N_SAMPLES
        target = 30.0 * (np.sin(self.t / 9.0) > -0.2)
        self.vz += 0.05 * (target - self.alt) - 0.3 * self.vz
        alt = self.alt + self.vz * dt * N_SAMPLES
        landing = alt <= 0.0 and self.vz < -0.3
        if alt <= 0.0:
            alt, self.vz = 0.0, 0.0
        self.alt = alt
        rotor = 2 * np.pi * (140 + 10 * np.sin(self.t))
        vib = np.sin(rotor * t[:, None] + self.phase) * (0.3 + 0.1 * self.rng.random(N_AXES))
        sig = vib + 0.05 * self.rng.standard_normal((N_SAMPLES, N_AXES))
        sig[:, 2] += 9.81 + 0.5 * self.vz
        sig[:, 8] += 9.81 + 0.5 * self.vz
        if landing:
            sig[N_SAMPLES // 2:N_SAMPLES // 2 + 6, [2, 8]] += 25.0
        if self.rng.random() < 0.002:  # prop strike / loose arm
            sig[:, [0, 1, 6, 7]] *= 6.0
        self.phase = (self.phase + rotor * dt * N_SAMPLES) % (2 * np.pi)
        self.batt -= 2e-5
        return np.clip(sig * 1000, -32768, 32767).astype("<i2"), int(landing)


class Attitude:
    """Madgwick IMU filter (gyro + accelerometer), run sample by sample like
    the flight controller does; one instance per IMU."""

    def __init__(self, beta=0.08, dt=1.0 / 250.0):
        self.beta = beta
        self.dt = dt
        self.q = (1.0, 0.0, 0.0, 0.0)

    def update(self, samples):
        beta, dt = self.beta, self.dt
        q0, q1, q2, q3 = self.q
        for ax, ay, az, gx, gy, gz in (samples / 1000.0).tolist():
            qd0 = 0.5 * (-q1 * gx - q2 * gy - q3 * gz)
            qd1 = 0.5 * (q0 * gx + q2 * gz - q3 * gy)
            qd2 = 0.5 * (q0 * gy - q1 * gz + q3 * gx)
            qd3 = 0.5 * (q0 * gz + q1 * gy - q2 * gx)
            n = math.sqrt(ax * ax + ay * ay + az * az)
            if n > 0.0:
                ax, ay, az = ax / n, ay / n, az / n
                f1 = 2 * (q1 * q3 - q0 * q2) - ax
                f2 = 2 * (q0 * q1 + q2 * q3) - ay
                f3 = 2 * (0.5 - q1 * q1 - q2 * q2) - az
                s0 = -2 * q2 * f1 + 2 * q1 * f2
                s1 = 2 * q3 * f1 + 2 * q0 * f2 - 4 * q1 * f3
                s2 = -2 * q0 * f1 + 2 * q3 * f2 - 4 * q2 * f3
                s3 = 2 * q1 * f1 + 2 * q2 * f2
                sn = math.sqrt(s0 * s0 + s1 * s1 + s2 * s2 + s3 * s3) or 1.0
                qd0 -= beta * s0 / sn
                qd1 -= beta * s1 / sn
                qd2 -= beta * s2 / sn
                qd3 -= beta * s3 / sn
            q0 += qd0 * dt
            q1 += qd1 * dt
            q2 += qd2 * dt
            q3 += qd3 * dt
            qn = math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
            q0, q1, q2, q3 = q0 / qn, q1 / qn, q2 / qn, q3 / qn
        self.q = (q0, q1, q2, q3)
        roll = math.atan2(2 * (q0 * q1 + q2 * q3), 1 - 2 * (q1 * q1 + q2 * q2))
        pitch = math.asin(max(-1.0, min(1.0, 2 * (q0 * q2 - q3 * q1))))
        return roll, pitch


class EventDetector:
    def __init__(self, outdir):
        self.outdir = outdir
        self.events = 0
        self.rms_baseline = None

    def check(self, recorder, window=512):
        blob = recorder.last(window)
        n = len(blob) // RECORD_SIZE
        recs = np.frombuffer(blob, dtype=np.uint8).reshape(n, RECORD_SIZE)
        payload = recs[:, HEADER.size:HEADER.size + PAYLOAD].copy().view("<i2")
        payload = payload.reshape(n, N_SAMPLES, N_AXES).astype(np.float32) / 1000.0
        flags = np.array([HEADER.unpack_from(blob, i * RECORD_SIZE)[4] for i in range(n)])
        rms = np.sqrt((payload[:, :, [0, 1, 6, 7]] ** 2).mean(axis=(1, 2)))
        base = float(np.median(rms))
        self.rms_baseline = base if self.rms_baseline is None else 0.9 * self.rms_baseline + 0.1 * base
        spike = np.flatnonzero(rms > 3 * self.rms_baseline)
        if flags.any() or spike.size:
            self.events += 1
            path = os.path.join(self.outdir, f"event_{self.events:04d}.bin.z")
            with open(path, "wb") as f:
                f.write(zlib.compress(blob[-64 * RECORD_SIZE:], 1))
        return rms.mean()


def main():
    sim = ImuSim()
    ahrs, ahrs2 = Attitude(), Attitude()
    rec = FlightRecorder(SLOTS)
    scratch = bytearray(RECORD_SIZE)
    t0 = last = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="blackbox_") as outdir:
        det = EventDetector(outdir)
        rms = 0.0
        for seq in range(N_BLOCKS):
            samples, landing = sim.block()
            roll, pitch = ahrs.update(samples[:, :6])
            roll2, pitch2 = ahrs2.update(samples[:, 6:])
            if abs(roll - roll2) > 0.2 or abs(pitch - pitch2) > 0.2:
                landing |= 2  # IMU disagreement
            roll, pitch = 0.5 * (roll + roll2), 0.5 * (pitch + pitch2)
            raw = samples.tobytes()
            scratch[HEADER.size:HEADER.size + PAYLOAD] = raw
            HEADER.pack_into(scratch, 0, b"BBX1", zlib.crc32(raw), seq, sim.t, landing, N_SAMPLES,
                             sim.alt, sim.vz, sim.batt, roll, pitch)
            rec.append(scratch)
            if seq % 100 == 99:
                rms = det.check(rec)
            now = time.perf_counter()
            if now - last >= 1.0:
                last = now
                print(f"block {seq:5d} alt={sim.alt:5.1f}m rms={rms:.3f}g events={det.events} "
                      f"recorder={rec.written} records", flush=True)
        n_files = len(os.listdir(outdir))
    print(f"done: {N_BLOCKS} blocks, {n_files} event dumps in {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
