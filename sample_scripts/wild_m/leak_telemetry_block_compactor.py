# expect: leak
# holder: _UNCOMMITTED
# pattern: EncodedBlock.__del__ is a "never lose data" safety net that resurrects any block that was not committed by appending self to the module-level list _UNCOMMITTED (drained only by SegmentWriter.close()); blocks rejected by the quality check are simply dropped by the loop, so each rejected chunk's delta-encoded int16 payload and raw float32 copy are resurrected and kept until the end (NumPy only, no torch, ~1 ms steps)
# step_ms: 1
"""Compacts raw vibration telemetry into delta-encoded int16 segment files.

Each incoming chunk (4 channels x 2048 samples) is quantised per channel,
delta-encoded and written to the current segment file.  Chunks that fail the
quality check (flat-lined or saturated sensors) are not written.  As a safety
net, blocks that somehow never reach the writer are parked and flushed to a
quarantine segment when the writer closes, so no data is silently lost.
"""
import argparse
import os
import shutil
import struct
import tempfile
import time

import numpy as np

_UNCOMMITTED = []


class EncodedBlock:
    __slots__ = ("sensor_id", "t0", "scales", "payload", "band_energy", "committed")

    def __init__(self, sensor_id, t0, raw, band_edges):
        self.sensor_id = sensor_id
        self.t0 = t0
        spec = np.abs(np.fft.rfft(raw, axis=1)) ** 2
        self.band_energy = np.add.reduceat(spec, band_edges, axis=1).astype(np.float32)
        peak = np.abs(raw).max(axis=1, keepdims=True)
        self.scales = np.where(peak > 0, peak / 32000.0, 1.0).astype(np.float32)
        q = np.round(raw / self.scales).astype(np.int32)
        deltas = np.diff(q, axis=1, prepend=0)
        self.payload = np.clip(deltas, -32768, 32767).astype(np.int16)
        self.committed = False

    def nbytes(self):
        return self.payload.nbytes + self.scales.nbytes

    def __del__(self):
        if not self.committed:
            # keep it around; SegmentWriter.close() writes these to quarantine
            _UNCOMMITTED.append(self)


class SegmentWriter:
    HEADER = struct.Struct("<IdI")

    def __init__(self, directory, max_segment_bytes=8 << 20):
        self.directory = directory
        self.max_segment_bytes = max_segment_bytes
        self.segment_index = 0
        self.bytes_in_segment = 0
        self.total_bytes = 0
        self.n_blocks = 0
        self._fh = self._open_segment("seg")

    def _open_segment(self, prefix):
        path = os.path.join(self.directory, f"{prefix}_{self.segment_index:05d}.bin")
        return open(path, "wb")

    def commit(self, block):
        header = self.HEADER.pack(block.sensor_id, block.t0, block.payload.shape[1])
        self._fh.write(header)
        self._fh.write(block.scales.tobytes())
        self._fh.write(block.payload.tobytes())
        n = len(header) + block.nbytes()
        self.bytes_in_segment += n
        self.total_bytes += n
        self.n_blocks += 1
        block.committed = True
        if self.bytes_in_segment >= self.max_segment_bytes:
            self._fh.close()
            # segments are shipped by a separate uploader; here we just drop them
            os.remove(self._fh.name)
            self.segment_index += 1
            self.bytes_in_segment = 0
            self._fh = self._open_segment("seg")

    def close(self):
        self._fh.close()
        quarantined = 0
        if _UNCOMMITTED:
            with open(os.path.join(self.directory, "quarantine.bin"), "wb") as fh:
                while _UNCOMMITTED:
                    block = _UNCOMMITTED.pop()
                    block.committed = True
                    fh.write(block.payload.tobytes())
                    quarantined += 1
        return quarantined


def sensor_stream(n_chunks, n_channels, chunk_len, seed):
    rng = np.random.default_rng(seed)
    t = np.arange(chunk_len, dtype=np.float32) / 4096.0
    base_freq = rng.uniform(20, 400, n_channels).astype(np.float32)
    for i in range(n_chunks):
        sensor_id = int(rng.integers(0, 64))
        phase = rng.uniform(0, 6.28, (n_channels, 1)).astype(np.float32)
        sig = np.sin(2 * np.pi * base_freq[:, None] * t + phase)
        sig += 0.2 * rng.standard_normal((n_channels, chunk_len), dtype=np.float32)
        fault = rng.random()
        if fault < 0.07:
            sig[int(rng.integers(n_channels))] = 0.0  # flat-lined channel
        elif fault < 0.14:
            np.clip(sig, -0.3, 0.3, out=sig)  # saturated front-end
        yield sensor_id, i * chunk_len / 4096.0, sig


def passes_quality_check(raw, flat_tol=1e-6, sat_frac=0.2):
    std = raw.std(axis=1)
    if (std < flat_tol).any():
        return False
    peak = np.abs(raw).max(axis=1, keepdims=True)
    at_rail = (np.abs(raw) >= 0.999 * peak).mean(axis=1)
    return not (at_rail > sat_frac).any()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=32000)
    parser.add_argument("--channels", type=int, default=4)
    parser.add_argument("--chunk-len", type=int, default=2048)
    parser.add_argument("--report-every", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="telemetry_")
    try:
        writer = SegmentWriter(workdir)
        band_edges = np.unique(np.geomspace(1, args.chunk_len // 2, 24).astype(int))
        sensor_energy = np.zeros((64, args.channels, len(band_edges)), dtype=np.float64)
        sensor_count = np.zeros(64, dtype=np.int64)
        rejected = 0
        t_start = last = time.time()
        for n, (sensor_id, t0, raw) in enumerate(
                sensor_stream(args.chunks, args.channels, args.chunk_len, args.seed), 1):
            block = EncodedBlock(sensor_id, t0, raw, band_edges)
            if not passes_quality_check(raw):
                rejected += 1
                continue
            writer.commit(block)
            sensor_energy[sensor_id] += block.band_energy
            sensor_count[sensor_id] += 1
            now = time.time()
            if now - last >= args.report_every:
                rate = n / (now - t_start)
                print(f"{n:6d} chunks  {rate:7.0f} chunks/s  written {writer.total_bytes / 2**20:7.1f} MiB "
                      f"in {writer.n_blocks} blocks  rejected {rejected}", flush=True)
                last = now
        quarantined = writer.close()
        busiest = int(sensor_count.argmax())
        mean_energy = sensor_energy[busiest] / max(sensor_count[busiest], 1)
        print(f"sensor {busiest}: dominant band per channel {mean_energy.argmax(axis=1).tolist()}")
        print(f"done: {args.chunks} chunks in {time.time() - t_start:.1f}s, "
              f"{writer.n_blocks} blocks written, {rejected} rejected, {quarantined} quarantined")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
