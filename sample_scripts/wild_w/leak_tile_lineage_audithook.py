# expect: leak
# holder: ProvenanceRecorder|addaudithook|ProvenanceRecorder._on_audit|ProvenanceRecorder.outputs
# pattern: NumPy-only satellite-tile preprocessing job (no torch, no optimizer; one step = one output shard: read two raw 6-band uint16 scenes with np.load, cloud-mask, compute NDVI/NDWI/texture features on a 48x48 grid, np.save the feature stack + a JSON manifest into a temp dir, ~4 ms per shard at the start and ~9 ms at the end, code in main() + process_shard() + a ProvenanceRecorder class); for data lineage every shard creates a ProvenanceRecorder that calls sys.addaudithook(self._on_audit) in __init__ to catch every "open" made by np.load/np.save/json inside the job, and keeps the arrays it writes in self.outputs so the manifest checksums can be computed when the shard closes; PEP 578 audit hooks can never be removed, so the interpreter's hook list keeps every recorder's bound method, hence every recorder with its outputs dict (the ~90 KB float32 feature stack + ~27 KB uint8 quicklook of that shard) for the whole run, and every later audit event also calls all the dead recorders' hooks
# step_ms: 7
"""Preprocess raw multispectral scenes into analysis-ready feature shards.

For every output shard we read two overlapping raw scenes (6 bands, uint16
DN values), convert to reflectance, build a simple cloud/shadow mask, and
compute a 48x48 grid of features (band means, NDVI, NDWI, local texture).
Each shard is written as a .npy feature stack plus a small JSON manifest with
full data lineage: which files were opened for reading and writing while the
shard was produced, and SHA-1 checksums of the written arrays.

Lineage is captured with a PEP 578 audit hook, so file opens that happen
inside library code (np.load, np.save, json) are recorded as well, without
wrapping every reader.

Usage:  python tile_lineage_audithook.py [--steps 2400] [--scenes 24]
"""
import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np

BANDS = ("blue", "green", "red", "nir", "swir1", "swir2")
SCENE = 192
GRID = 48


class ProvenanceRecorder:
    """Collects the file accesses of one shard job (inputs + outputs)."""

    def __init__(self, shard_id):
        self.shard_id = shard_id
        self.active = False
        self.reads = []
        self.writes = []
        self.outputs = {}
        sys.addaudithook(self._on_audit)

    def _on_audit(self, event, args):
        if not self.active or event != "open":
            return
        path, mode = args[0], args[1]
        if not isinstance(path, str):
            return
        if mode is None or mode == "r" or "r" in str(mode) and "+" not in str(mode):
            self.reads.append(os.path.basename(path))
        else:
            self.writes.append(os.path.basename(path))

    def __enter__(self):
        self.active = True
        return self

    def __exit__(self, *exc):
        self.active = False
        return False

    def attach_output(self, name, array):
        self.outputs[name] = array

    def manifest(self):
        return {
            "shard": self.shard_id,
            "reads": sorted(set(self.reads)),
            "writes": sorted(set(self.writes)),
            "sha1": {k: hashlib.sha1(np.ascontiguousarray(v).view(np.uint8)).hexdigest()
                     for k, v in self.outputs.items()},
        }


def make_raw_scenes(root, n, seed):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:SCENE, 0:SCENE].astype(np.float32) / SCENE
    paths = []
    for i in range(n):
        base = rng.uniform(0.05, 0.3, size=(6, 1, 1)).astype(np.float32)
        field = np.sin(xx * rng.uniform(3, 12) + yy * rng.uniform(3, 12))[None] * 0.05
        veg = (np.sin(xx * 7 + i) * np.cos(yy * 5 - i) > 0.2)[None] * np.array([-.02, .02, -.04, .25, .05, -.02], np.float32)[:, None, None]
        cloud = (rng.random((1, SCENE, SCENE)) < 0.02).astype(np.float32)
        refl = base + field + veg + cloud * 0.6 + rng.normal(0, 0.01, size=(6, SCENE, SCENE)).astype(np.float32)
        dn = np.clip(refl * 10000, 0, 65535).astype(np.uint16)
        p = os.path.join(root, f"scene_{i:03d}.npy")
        np.save(p, dn)
        paths.append(p)
    return paths


def block_mean(a, k):
    c, h, w = a.shape
    return a.reshape(c, h // k, k, w // k, k).mean(axis=(2, 4))


def process_shard(shard_id, scene_paths, out_dir, rng):
    i, j = rng.choice(len(scene_paths), size=2, replace=False)
    a = np.load(scene_paths[i]).astype(np.float32) * 1e-4
    b = np.load(scene_paths[j]).astype(np.float32) * 1e-4
    w = rng.uniform(0.3, 0.7)
    refl = w * a + (1 - w) * b
    bright = refl[:3].mean(axis=0)
    cloud = bright > 0.45
    shadow = refl[3] < 0.03
    valid = ~(cloud | shadow)
    refl = np.where(valid[None], refl, np.nan)
    k = SCENE // GRID
    means = block_mean(np.nan_to_num(refl, nan=0.0), k)
    frac = block_mean(valid[None].astype(np.float32), k)[0]
    means = means / np.maximum(frac, 1e-3)
    ndvi = (means[3] - means[2]) / (means[3] + means[2] + 1e-6)
    ndwi = (means[1] - means[3]) / (means[1] + means[3] + 1e-6)
    nir = np.nan_to_num(refl[3], nan=0.0)
    tex = block_mean((nir[None] - np.repeat(np.repeat(block_mean(nir[None], k)[0], k, 0), k, 1)[None]) ** 2, k)[0]
    feats = np.concatenate([means, ndvi[None], ndwi[None], np.sqrt(tex)[None], frac[None]]).astype(np.float32)
    quick = np.clip(refl[[2, 1, 0], ::2, ::2] * 255 * 3, 0, 255)
    quick = np.nan_to_num(quick).astype(np.uint8)
    np.save(os.path.join(out_dir, f"shard_{shard_id:05d}.npy"), feats)
    return feats, quick, float(valid.mean()), float(np.nanmean(ndvi))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=2400, help="number of output shards")
    ap.add_argument("--scenes", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="tile_lineage_")
    raw_dir = os.path.join(work, "raw")
    out_dir = os.path.join(work, "shards")
    os.makedirs(raw_dir)
    os.makedirs(out_dir)
    try:
        scenes = make_raw_scenes(raw_dir, args.scenes, args.seed)
        rng = np.random.default_rng(args.seed + 1)
        t0 = time.time()
        valid_sum = 0.0
        ndvi_sum = 0.0
        for shard in range(args.steps):
            rec = ProvenanceRecorder(shard)
            with rec:
                feats, quick, valid, ndvi = process_shard(shard, scenes, out_dir, rng)
                rec.attach_output("features", feats)
                rec.attach_output("quicklook", quick)
                with open(os.path.join(out_dir, f"shard_{shard:05d}.json"), "w") as fh:
                    json.dump(rec.manifest(), fh)
            valid_sum += valid
            ndvi_sum += ndvi
            if shard % 400 == 0:
                print(f"[{time.time() - t0:6.1f}s] shard {shard:5d}  valid={valid_sum / (shard + 1):.3f}  "
                      f"mean NDVI={ndvi_sum / (shard + 1):+.3f}  reads={len(rec.reads)} writes={len(rec.writes)}",
                      flush=True)
        print(f"wrote {args.steps} shards in {time.time() - t0:.1f}s "
              f"(mean valid fraction {valid_sum / args.steps:.3f})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
