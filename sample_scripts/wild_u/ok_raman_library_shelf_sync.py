# expect: no_leak
# holder:
# pattern: NumPy/SciPy-only Raman spectrum identification stream (no torch, no optimizer; ~1 ms per spectrum, code in main() + SpectrumSource/SpectrumStore/Matcher classes): each synthetic spectrum is de-spiked, baseline-corrected (rolling minimum + Savitzky-Golay), peak-picked with scipy.signal.find_peaks and cosine-matched against a 40-compound library; every processed spectrum (float32 corrected trace + peak table + match metadata, ~5 KB) is written to a shelve database in a temp dir opened with writeback=True, and re-scored records are mutated in place (rec["flags"].append(...)), so Shelf.cache holds every record touched since the last flush; this looks like an ever-growing writeback cache and an ever-growing archive, but SpectrumStore.put() calls self.db.sync() every 400 records (which writes the cache back and empties it), the archive is a ring of 5000 slot keys that are overwritten (so the dbm index in RAM stops growing once the ring is full) and the ambiguous-key list is cut to its last 200 entries at every re-scoring, so memory is flat apart from a ~2 MB sawtooth
# step_ms: 1
"""Streaming Raman spectrum identification against a reference library.

Synthetic spectra are mixtures of 1-3 library compounds (Lorentzian bands)
on a fluorescence-like polynomial background with shot noise and the odd
cosmic-ray spike. Each spectrum is

  1. de-spiked (median filter residual test),
  2. baseline-corrected (rolling minimum + Savitzky-Golay smoothing),
  3. peak-picked (scipy.signal.find_peaks),
  4. matched against the library by cosine similarity,

and archived in a shelve database for later review. Every so often the
older archived spectra whose best match was ambiguous are re-scored with
the current library weighting and flagged.

Main options (defaults):
    --spectra 18000 --sync-every 400
"""
import argparse
import os
import shelve
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
from scipy.ndimage import minimum_filter1d, median_filter
from scipy.signal import find_peaks, savgol_filter

N_POINTS = 1024
SHIFT = np.linspace(200, 1800, N_POINTS)  # Raman shift, 1/cm


def make_library(rng, n_compounds):
    lib = np.zeros((n_compounds, N_POINTS), np.float32)
    for i in range(n_compounds):
        for _ in range(rng.integers(3, 8)):
            c = rng.uniform(250, 1750)
            w = rng.uniform(4, 18)
            lib[i] += rng.uniform(0.2, 1.0) / (1 + ((SHIFT - c) / w) ** 2)
        lib[i] /= np.linalg.norm(lib[i])
    return lib


class SpectrumSource:
    def __init__(self, rng, lib):
        self.rng, self.lib = rng, lib
        self.n = 0

    def next(self):
        rng = self.rng
        k = rng.integers(1, 4)
        comp = rng.choice(len(self.lib), k, replace=False)
        conc = rng.dirichlet(np.ones(k))
        x = (SHIFT - 1000) / 800
        background = np.polyval(rng.normal(0, 1, 4), x) + rng.uniform(2, 6)
        signal = 40 * (conc @ self.lib[comp]) + 3 * background
        spec = rng.poisson(np.maximum(signal * 20, 0)) / 20.0
        if rng.random() < 0.1:
            spec[rng.integers(N_POINTS)] += rng.uniform(5, 20)
        self.n += 1
        return f"spec{self.n:07d}", spec.astype(np.float32), comp[np.argmax(conc)]


def preprocess(spec):
    med = median_filter(spec, size=5)
    resid = spec - med
    spikes = np.abs(resid) > 6 * (np.median(np.abs(resid)) + 1e-6)
    spec = np.where(spikes, med, spec)
    base = savgol_filter(minimum_filter1d(spec, 81), 101, 2)
    corr = savgol_filter(spec - base, 9, 3)
    return corr.astype(np.float32), int(spikes.sum())


class Matcher:
    def __init__(self, lib):
        self.lib = lib

    def __call__(self, corr):
        v = np.maximum(corr, 0)
        v = v / (np.linalg.norm(v) + 1e-9)
        scores = self.lib @ v
        order = np.argsort(scores)[::-1]
        return int(order[0]), float(scores[order[0]]), float(scores[order[0]] - scores[order[1]])


class SpectrumStore:
    """Rolling on-disk archive of the most recent `capacity` spectra (ring of slots)."""

    def __init__(self, path, capacity, sync_every):
        self.db = shelve.open(path, flag="n", writeback=True)
        self.capacity = capacity
        self.sync_every = sync_every
        self.n = 0
        self.ambiguous = []   # (slot, spectrum id) of low-margin matches, re-scored in batches

    def put(self, spec_id, record):
        slot = f"slot{self.n % self.capacity:05d}"
        record["id"] = spec_id
        self.db[slot] = record
        self.n += 1
        if record["margin"] < 0.05:
            self.ambiguous.append((slot, spec_id))
        if self.n % self.sync_every == 0:
            self.db.sync()

    def get(self, slot, spec_id):
        rec = self.db[slot]
        return rec if rec["id"] == spec_id else None

    def close(self):
        self.db.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spectra", type=int, default=18000)
    ap.add_argument("--library", type=int, default=40)
    ap.add_argument("--capacity", type=int, default=5000)
    ap.add_argument("--sync-every", type=int, default=400)
    ap.add_argument("--rescore-every", type=int, default=1000)
    ap.add_argument("--log-every", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=2)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    lib = make_library(np.random.default_rng(17), args.library)
    source = SpectrumSource(rng, lib)
    match = Matcher(lib)
    tmp = tempfile.TemporaryDirectory(prefix="raman_")
    store = SpectrumStore(os.path.join(tmp.name, "spectra"), args.capacity, args.sync_every)

    t0 = time.time()
    hits = 0
    for i in range(1, args.spectra + 1):
        key, spec, truth = source.next()
        corr, n_spikes = preprocess(spec)
        peaks, props = find_peaks(corr, prominence=0.3 * corr.std(), width=2)
        best, score, margin = match(corr)
        hits += best == truth
        store.put(key, {
            "corrected": corr,
            "peaks": np.stack([SHIFT[peaks], props["prominences"], props["widths"]]).astype(np.float32),
            "best": best,
            "score": score,
            "margin": margin,
            "spikes": n_spikes,
            "flags": [],
        })

        if i % args.rescore_every == 0 and store.ambiguous:
            # re-score the ambiguous ones with a library weighted by how often each compound is seen
            recs = [store.get(slot, sid) for slot, sid in store.ambiguous[-200:]]
            recs = [r for r in recs if r is not None]
            weights = np.bincount([r["best"] for r in recs], minlength=len(lib)) + 1.0
            for rec in recs:
                v = np.maximum(rec["corrected"], 0)
                s = (lib @ (v / (np.linalg.norm(v) + 1e-9))) * np.log1p(weights) / np.log1p(weights).max()
                if int(np.argmax(s)) != rec["best"]:
                    rec["flags"].append(("rescored", i, int(np.argmax(s))))
            store.ambiguous = store.ambiguous[-200:]
        if i % args.log_every == 0:
            print(f"spectrum {i:6d}  top-1 acc {hits / i:.3f}  ambiguous kept {len(store.ambiguous)}  "
                  f"{(time.time() - t0) / i * 1e3:.2f} ms/spectrum", flush=True)

    store.close()
    tmp.cleanup()
    print(f"done: {args.spectra} spectra, top-1 accuracy {hits / args.spectra:.3f}")


if __name__ == "__main__":
    main()
