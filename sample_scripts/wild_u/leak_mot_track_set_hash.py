# expect: leak
# holder: tracker.tracks|self.tracks|Track
# pattern: online multi-object tracking (SORT/DeepSORT-style) on a synthetic video stream: a constant-velocity Kalman filter per track, Hungarian assignment (scipy linear_sum_assignment) on a motion + appearance cost, and a small CNN re-ID embedder run under torch.inference_mode (no optimizer, no training; ~8 ms per frame, code in main() + Tracker/Track/ReIDNet classes); tracks live in tracker.tracks, a set, and Track is a @dataclass(unsafe_hash=True) so it can go in that set; the array-valued fields are excluded from the hash but the lifecycle field `state` is not, so the hash changes when a track goes tentative -> confirmed -> deleted, and the `self.tracks.discard(t)` in _prune() silently finds nothing; every track that ever existed stays in the set with its deque of up to 16 appearance crops (3x32x32 float32 copies, 12 KB each) and its embedding gallery, while the per-frame loop only looks at the non-deleted ones
# step_ms: 8
"""DeepSORT-lite: online multi-object tracking with a Kalman filter and appearance re-ID.

The script synthesises a stream of frames with objects entering, moving
(constant velocity plus jitter) and leaving a 2-D arena, produces noisy
detections with appearance crops, and tracks them online:

  * one constant-velocity Kalman filter per track (state x, y, vx, vy),
  * Hungarian assignment on a gated motion cost blended with the cosine
    distance between the detection embedding and the track's gallery,
  * a tentative -> confirmed -> deleted life cycle (n_init / max_age).

At the end it prints simple CLEAR-MOT style numbers (matches, misses,
false positives, identity switches).

Main options (defaults):
    --frames 2600 --spawn-rate 0.12
"""
import argparse
import collections
import itertools
import os
import time
from dataclasses import dataclass, field

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment

torch.set_num_threads(1)

CONFIG = {
    "arena": 100.0,
    "crop": 32,
    "emb_dim": 64,
    "n_init": 3,
    "max_age": 12,
    "gallery": 48,
    "crop_history": 16,
    "gate": 9.4877,  # chi2 0.95, 4 dof
    "w_app": 0.6,
    "tentative_penalty": 0.3,
    "spawn_suppress": 2.0,
    "det_noise": 0.6,
    "p_detect": 0.92,
    "clutter": 0.8,
}


# --------------------------------------------------------------------------
# synthetic world
# --------------------------------------------------------------------------
class World:
    def __init__(self, rng, spawn_rate, crop):
        self.rng = rng
        self.spawn_rate = spawn_rate
        self.crop = crop
        self.objects = {}
        self.next_gt = itertools.count()
        self.textures = {}

    def _texture(self, gid):
        r = np.random.default_rng(1000 + gid)
        base = r.normal(0.0, 1.0, (3, 1, 1)).astype(np.float32)
        freq = r.uniform(0.1, 0.6, 2)
        yy, xx = np.mgrid[0:self.crop, 0:self.crop].astype(np.float32)
        pattern = np.sin(freq[0] * xx + freq[1] * yy)[None]
        return (base + 0.7 * pattern).astype(np.float32)

    def step(self):
        rng = self.rng
        for _ in range(rng.poisson(self.spawn_rate)):
            gid = next(self.next_gt)
            side = rng.integers(4)
            pos = rng.uniform(0, CONFIG["arena"], 2)
            pos[side % 2] = 0.0 if side < 2 else CONFIG["arena"]
            vel = (CONFIG["arena"] / 2 - pos) / rng.uniform(60, 160) + rng.normal(0, 0.2, 2)
            self.objects[gid] = [pos, vel]
            self.textures[gid] = self._texture(gid)
        gone = []
        for gid, (pos, vel) in self.objects.items():
            vel += rng.normal(0, 0.03, 2)
            pos += vel
            if np.any(pos < -2) or np.any(pos > CONFIG["arena"] + 2):
                gone.append(gid)
        for gid in gone:
            del self.objects[gid]
            del self.textures[gid]

    def detections(self):
        rng = self.rng
        dets, crops, gts = [], [], []
        for gid, (pos, _) in self.objects.items():
            if rng.random() > CONFIG["p_detect"]:
                continue
            dets.append(pos + rng.normal(0, CONFIG["det_noise"], 2))
            crop = self.textures[gid] * rng.uniform(0.8, 1.2)
            crops.append(crop + rng.normal(0, 0.3, crop.shape).astype(np.float32))
            gts.append(gid)
        for _ in range(rng.poisson(CONFIG["clutter"])):
            dets.append(rng.uniform(0, CONFIG["arena"], 2))
            crops.append(rng.normal(0, 1.0, (3, self.crop, self.crop)).astype(np.float32))
            gts.append(-1)
        if not dets:
            return np.zeros((0, 2)), np.zeros((0, 3, self.crop, self.crop), np.float32), []
        return np.array(dets), np.stack(crops), gts


# --------------------------------------------------------------------------
# re-identification network
# --------------------------------------------------------------------------
class ReIDNet(nn.Module):
    def __init__(self, emb_dim):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.c3 = nn.Conv2d(32, 48, 3, padding=1)
        self.fc = nn.Linear(48 * 4 * 4, emb_dim)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = F.max_pool2d(F.relu(self.c3(x)), 2)
        return F.normalize(self.fc(x.flatten(1)), dim=1)


# --------------------------------------------------------------------------
# Kalman filter
# --------------------------------------------------------------------------
F_MAT = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=np.float64)
H_MAT = np.array([[1, 0, 0, 0], [0, 1, 0, 0]], dtype=np.float64)
Q_MAT = np.diag([0.05, 0.05, 0.02, 0.02])
R_MAT = np.eye(2) * CONFIG["det_noise"] ** 2


@dataclass(unsafe_hash=True)
class Track:
    track_id: int
    state: str = "tentative"
    hits: int = field(default=1, compare=False)
    age: int = field(default=0, compare=False)
    time_since_update: int = field(default=0, compare=False)
    mean: np.ndarray = field(default=None, compare=False, repr=False)
    cov: np.ndarray = field(default=None, compare=False, repr=False)
    gallery: collections.deque = field(default=None, compare=False, repr=False)
    crops: collections.deque = field(default=None, compare=False, repr=False)
    gt_votes: collections.Counter = field(default_factory=collections.Counter, compare=False, repr=False)

    def predict(self):
        self.mean = F_MAT @ self.mean
        self.cov = F_MAT @ self.cov @ F_MAT.T + Q_MAT
        self.age += 1
        self.time_since_update += 1

    def update(self, z, emb, crop, gt):
        S = H_MAT @ self.cov @ H_MAT.T + R_MAT
        K = self.cov @ H_MAT.T @ np.linalg.inv(S)
        self.mean = self.mean + K @ (z - H_MAT @ self.mean)
        self.cov = (np.eye(4) - K @ H_MAT) @ self.cov
        self.gallery.append(emb)
        self.crops.append(crop)
        self.gt_votes[gt] += 1
        self.hits += 1
        self.time_since_update = 0

    def gating_distance(self, dets):
        S = H_MAT @ self.cov @ H_MAT.T + R_MAT
        d = dets - (H_MAT @ self.mean)[None]
        return np.einsum("ni,ij,nj->n", d, np.linalg.inv(S), d)


class Tracker:
    def __init__(self, cfg):
        self.cfg = cfg
        self.tracks = set()
        self._ids = itertools.count(1)

    def _new_track(self, z, emb, crop, gt):
        t = Track(
            track_id=next(self._ids),
            mean=np.array([z[0], z[1], 0.0, 0.0]),
            cov=np.diag([1.0, 1.0, 4.0, 4.0]),
            gallery=collections.deque(maxlen=self.cfg["gallery"]),
            crops=collections.deque(maxlen=self.cfg["crop_history"]),
        )
        t.gallery.append(emb)
        t.crops.append(crop)
        t.gt_votes[gt] += 1
        self.tracks.add(t)

    def active(self):
        # sorted so that assignment ties are broken the same way on every run
        return sorted((t for t in self.tracks if t.state != "deleted"), key=lambda t: t.track_id)

    def _prune(self):
        for t in self.active():
            if t.state == "tentative" and t.time_since_update > 1:
                t.state = "deleted"
            elif t.time_since_update > self.cfg["max_age"]:
                t.state = "deleted"
            if t.state == "deleted":
                self.tracks.discard(t)

    def step(self, dets, embs, crops, gts):
        live = self.active()
        for t in live:
            t.predict()
        matches, unmatched_d = [], list(range(len(dets)))
        near = np.zeros(len(dets), dtype=bool)
        if live and len(dets):
            cost = np.zeros((len(live), len(dets)))
            for i, t in enumerate(live):
                gate = t.gating_distance(dets)
                gal = np.stack(t.gallery)
                app = 1.0 - (embs @ gal.T).max(axis=1)
                cost[i] = (1 - self.cfg["w_app"]) * gate / self.cfg["gate"] + self.cfg["w_app"] * app
                if t.state == "tentative":
                    cost[i] += self.cfg["tentative_penalty"]
                cost[i, gate > self.cfg["gate"]] = 1e5
                near |= gate < self.cfg["spawn_suppress"]
            rows, cols = linear_sum_assignment(cost)
            for r, c in zip(rows, cols):
                if cost[r, c] < 1e4:
                    matches.append((live[r], c))
            used = {c for _, c in matches}
            unmatched_d = [j for j in range(len(dets)) if j not in used]
        for t, j in matches:
            t.update(dets[j], embs[j].copy(), crops[j].copy(), gts[j])
            if t.state == "tentative" and t.hits >= self.cfg["n_init"]:
                t.state = "confirmed"
        for j in unmatched_d:
            if near[j]:
                continue
            self._new_track(dets[j], embs[j].copy(), crops[j].copy(), gts[j])
        self._prune()
        return matches


class MOTMetrics:
    def __init__(self):
        self.matches = self.fp = self.misses = self.idsw = 0
        self.last_track_for_gt = {}

    def update(self, matches, gts, n_objects):
        seen = set()
        for t, j in matches:
            if t.state != "confirmed":
                continue
            gid = gts[j]
            if gid < 0:
                self.fp += 1
                continue
            seen.add(gid)
            self.matches += 1
            prev = self.last_track_for_gt.get(gid)
            if prev is not None and prev != t.track_id:
                self.idsw += 1
            self.last_track_for_gt[gid] = t.track_id
        self.misses += max(0, n_objects - len(seen))

    def mota(self):
        gt_total = self.matches + self.misses
        return 1.0 - (self.misses + self.fp + self.idsw) / max(gt_total, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=2600)
    ap.add_argument("--spawn-rate", type=float, default=0.12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--log-every", type=int, default=250)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    world = World(rng, args.spawn_rate, CONFIG["crop"])
    net = ReIDNet(CONFIG["emb_dim"]).eval()
    tracker = Tracker(CONFIG)
    metrics = MOTMetrics()

    # let a few objects enter before the clock starts
    for _ in range(40):
        world.step()

    t0 = time.time()
    for frame in range(1, args.frames + 1):
        world.step()
        dets, crops, gts = world.detections()
        if len(dets):
            with torch.inference_mode():
                embs = net(torch.from_numpy(crops)).numpy()
        else:
            embs = np.zeros((0, CONFIG["emb_dim"]), np.float32)
        matches = tracker.step(dets, embs, crops, gts)
        metrics.update(matches, gts, len(world.objects))

        if frame % args.log_every == 0:
            live = tracker.active()
            n_conf = sum(t.state == "confirmed" for t in live)
            print(f"frame {frame:5d}  objects {len(world.objects):3d}  live tracks {len(live):3d} "
                  f"(confirmed {n_conf:3d})  MOTA {metrics.mota():.3f}  IDSW {metrics.idsw}  "
                  f"{(time.time() - t0) / frame * 1e3:.1f} ms/frame", flush=True)

    print(f"done: {args.frames} frames, matches {metrics.matches}, misses {metrics.misses}, "
          f"FP {metrics.fp}, IDSW {metrics.idsw}, MOTA {metrics.mota():.3f}")


if __name__ == "__main__":
    main()
