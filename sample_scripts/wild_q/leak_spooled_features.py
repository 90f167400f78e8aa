# expect: leak
# holder: writer.spools|self.spools|spool._file
# pattern: NumPy-only seismic feature-extraction job (no torch): each station-hour of 3-component waveform is turned into log band-energy spectrogram features plus STA/LTA picks and written as a binary record to one of --partitions tempfile.SpooledTemporaryFile spools that are meant to stay in memory only up to their share of --spool-budget-mb and then roll over to a file in /tmp; the share is computed as spool_budget_mb // partitions * 2**20, which is 0 with the defaults (64 // 96), and SpooledTemporaryFile treats max_size=0 as "never roll over", so every record stays in the spools' in-memory BytesIO buffers and writer.spools grows by ~150 KB per station-hour for the whole job
# step_ms: 6
"""Band-energy feature extraction for a regional seismic network.

For every (station, hour) we synthesise a 3-component broadband record
(microseism background, a few local events, occasional spikes), remove the
mean and taper, compute a short-time spectrum on 5.12 s windows and reduce
it to log energies in NBANDS log-spaced bands per component.  A classic
STA/LTA trigger picks candidate arrivals.  Feature records are spooled to
per-partition temporary files (partitioned by station so that the final
shards are station-contiguous) and concatenated into one feature file at
the end; the catalogue of picks is printed as a summary.
"""
import argparse
import os
import shutil
import struct
import tempfile
import time
import zlib

import numpy as np

FS = 50.0
NBANDS = 40
RECORD_HDR = struct.Struct("<IIHHI")  # station, hour, n_frames, n_bands, crc


def synth_record(rng, seconds, n_events):
    n = int(seconds * FS)
    t = np.arange(n) / FS
    micro = sum(a * np.sin(2 * np.pi * f * t + rng.uniform(0, 2 * np.pi))
                for a, f in ((1.0, 0.14), (0.6, 0.21), (0.3, 0.33)))
    x = micro[None, :] * rng.uniform(0.5, 1.5, (3, 1)) + 0.2 * rng.standard_normal((3, n))
    for _ in range(n_events):
        t0 = rng.uniform(0, seconds - 60)
        i0 = int(t0 * FS)
        dur = int(rng.uniform(8, 40) * FS)
        tt = np.arange(dur) / FS
        f = rng.uniform(2, 12)
        env = np.exp(-tt / rng.uniform(2, 10)) * (1 - np.exp(-tt * 8))
        amp = 10 ** rng.uniform(0.3, 1.5)
        x[:, i0:i0 + dur] += amp * env * np.sin(2 * np.pi * f * tt + rng.uniform(0, 6.28, (3, 1)))
    if rng.random() < 0.1:
        x[:, rng.integers(0, n, 5)] += rng.normal(0, 50, (3, 5))
    return x.astype(np.float32)


def band_edges(nfft):
    freqs = np.fft.rfftfreq(nfft, 1 / FS)
    edges = np.geomspace(0.8, FS / 2, NBANDS + 1)
    idx = np.searchsorted(freqs, edges)
    step = np.arange(NBANDS + 1)
    return np.maximum.accumulate(idx - step) + step  # at least one FFT bin per band


def band_features(x, nfft=256, hop=128, edges=None):
    x = x - x.mean(axis=1, keepdims=True)
    taper = np.hanning(nfft).astype(np.float32)
    n_frames = 1 + (x.shape[1] - nfft) // hop
    idx = np.arange(nfft)[None, :] + hop * np.arange(n_frames)[:, None]
    frames = x[:, idx] * taper
    power = np.abs(np.fft.rfft(frames, axis=-1)) ** 2
    csum = np.concatenate([np.zeros(power.shape[:-1] + (1,)), np.cumsum(power, axis=-1)], axis=-1)
    e = csum[..., edges[1:]] - csum[..., edges[:-1]]
    return np.log10(e + 1e-6).astype(np.float32)


def sta_lta_picks(x, sta=1.0, lta=30.0, on=4.0):
    env = (x.astype(np.float64) ** 2).sum(axis=0)
    c = np.concatenate([[0.0], np.cumsum(env)])
    ns, nl = int(sta * FS), int(lta * FS)
    s = (c[nl:] - c[nl - ns:-ns]) / ns
    l_ = (c[nl:] - c[:-nl]) / nl
    ratio = s / (l_ + 1e-9)
    above = ratio > on
    starts = np.nonzero(above[1:] & ~above[:-1])[0] + nl
    return starts / FS, ratio.max()


class PartitionedSpool:
    """Station-partitioned record spool; partitions spill to disk past their memory share."""

    def __init__(self, partitions, budget_mb, tmpdir):
        self.partitions = partitions
        per_partition = budget_mb // partitions * 2 ** 20
        self.spools = [tempfile.SpooledTemporaryFile(max_size=per_partition, dir=tmpdir, prefix=f"part{i:03d}_")
                       for i in range(partitions)]
        self.index = []
        self.bytes_written = 0

    def write(self, station, hour, feats):
        part = station % self.partitions
        payload = feats.tobytes()
        hdr = RECORD_HDR.pack(station, hour, feats.shape[-2], feats.shape[-1], zlib.crc32(payload))
        f = self.spools[part]
        self.index.append((station, hour, part, f.tell()))
        f.write(hdr)
        f.write(payload)
        self.bytes_written += len(hdr) + len(payload)

    def finalize(self, out_path):
        with open(out_path, "wb") as out:
            for f in self.spools:
                f.seek(0)
                shutil.copyfileobj(f, out, 1 << 20)
                f.close()
        self.spools = []
        return os.path.getsize(out_path)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--stations", type=int, default=120)
    p.add_argument("--hours", type=int, default=21)
    p.add_argument("--record-seconds", type=float, default=800.0)
    p.add_argument("--partitions", type=int, default=96)
    p.add_argument("--spool-budget-mb", type=int, default=64)
    p.add_argument("--log-every", type=int, default=240)
    p.add_argument("--seed", type=int, default=3)
    args = p.parse_args()

    rng = np.random.default_rng(args.seed)
    edges = band_edges(256)
    tmpdir = tempfile.mkdtemp(prefix="seisfeat_", dir="/tmp")
    writer = PartitionedSpool(args.partitions, args.spool_budget_mb, tmpdir)
    picks_total, noisy = 0, 0
    rms_sum = np.zeros(NBANDS)
    t0 = time.perf_counter()
    n = 0
    try:
        for hour in range(args.hours):
            for station in range(args.stations):
                x = synth_record(rng, args.record_seconds, rng.poisson(1.5))
                feats = band_features(x, edges=edges)
                picks, peak = sta_lta_picks(x)
                picks_total += len(picks)
                noisy += int(np.abs(x).max() > 40 and peak < 20)
                rms_sum += feats.mean(axis=(0, 1))
                writer.write(station, hour, feats)
                n += 1
                if n % args.log_every == 0:
                    ms = (time.perf_counter() - t0) * 1000 / n
                    print(f"hour {hour} station {station:3d}  records {n:5d}  picks {picks_total:5d}  "
                          f"spooled {writer.bytes_written / 2**20:7.1f} MB  {ms:.1f} ms/record", flush=True)
        size = writer.finalize(os.path.join(tmpdir, "features.bin"))
        print(f"wrote {size / 2**20:.1f} MB of features for {n} station-hours; "
              f"{picks_total} picks, {noisy} records flagged noisy")
        print("mean log band energy:", np.round(rms_sum / n, 2)[::8])
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


if __name__ == "__main__":
    main()
