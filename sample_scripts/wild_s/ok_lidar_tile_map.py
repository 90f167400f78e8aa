# expect: no_leak
# pattern: NumPy-only 2D lidar occupancy mapping of a closed office building (no torch, no optimizer); the map is a dict of 64x64-cell tiles (log-odds, hit/miss counters, last-seen stamps, probability cache; ~64 KB each) that are allocated lazily the first time a beam touches them; the robot first sweeps every room (the first ~40% of the steps), so the tile dict grows with the explored area, and then patrols rooms it has already mapped; the outer walls stop every beam, so the number of tiles is bounded by the building footprint and memory is flat for the rest of the run
# step_ms: 7
"""Occupancy-grid mapping for an indoor inspection robot.

A synthetic office floor (a grid of rooms connected by doors, with pillars and
furniture) is scanned by a 2D lidar while the robot follows a route through
every room, then keeps patrolling. Each scan is ray-cast against the ground
truth and fused into a log-odds occupancy map that is stored sparsely as
tiles created on demand. Coverage and map accuracy are reported periodically
and an overview image is rendered for the operator UI.
"""
import contextlib
import functools
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Tuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

log = logging.getLogger("mapping")


@dataclass
class BuildingConfig:
    rooms_y: int = 6
    rooms_x: int = 9
    room_cells: int = 340
    wall: int = 4
    door: int = 40
    clutter_per_room: int = 6
    seed: int = 31


@dataclass
class SensorConfig:
    beams: int = 360
    max_range: int = 160        # cells (5 cm each)
    noise_cells: float = 0.7
    dropout: float = 0.03


@dataclass
class MapConfig:
    tile: int = 64
    l_occ: float = 0.85
    l_free: float = -0.4
    l_min: float = -4.0
    l_max: float = 4.0


@dataclass
class RunConfig:
    speed_cells: float = 14.0
    patrol_steps: int = 1300
    report_every: int = 350
    render_every: int = 700
    building: BuildingConfig = field(default_factory=BuildingConfig)
    sensor: SensorConfig = field(default_factory=SensorConfig)
    map: MapConfig = field(default_factory=MapConfig)


# -------------------------------------------------------------- world

def build_floor(cfg: BuildingConfig) -> np.ndarray:
    rng = np.random.default_rng(cfg.seed)
    h = cfg.rooms_y * cfg.room_cells + cfg.wall
    w = cfg.rooms_x * cfg.room_cells + cfg.wall
    grid = np.zeros((h, w), dtype=bool)
    for i in range(cfg.rooms_y + 1):
        grid[i * cfg.room_cells:i * cfg.room_cells + cfg.wall, :] = True
    for j in range(cfg.rooms_x + 1):
        grid[:, j * cfg.room_cells:j * cfg.room_cells + cfg.wall] = True
    half = cfg.room_cells // 2
    for i in range(cfg.rooms_y):
        for j in range(cfg.rooms_x):
            y0, x0 = i * cfg.room_cells, j * cfg.room_cells
            if j + 1 < cfg.rooms_x:   # door to the east
                grid[y0 + half - cfg.door // 2:y0 + half + cfg.door // 2,
                     x0 + cfg.room_cells:x0 + cfg.room_cells + cfg.wall] = False
            if i + 1 < cfg.rooms_y:   # door to the south
                grid[y0 + cfg.room_cells:y0 + cfg.room_cells + cfg.wall,
                     x0 + half - cfg.door // 2:x0 + half + cfg.door // 2] = False
            for _ in range(cfg.clutter_per_room):
                cy, cx = rng.integers(cfg.wall + 10, cfg.room_cells - 30, size=2)
                if abs(cy - half) < 60 or abs(cx - half) < 60:
                    continue   # keep the cross-shaped walkway through the doors clear
                sy, sx = rng.integers(6, 30, size=2)
                grid[y0 + cy:y0 + cy + sy, x0 + cx:x0 + cx + sx] = True
    return grid


def room_centre(cfg: BuildingConfig, i, j):
    return np.array([i * cfg.room_cells + cfg.room_cells // 2 + cfg.wall // 2,
                     j * cfg.room_cells + cfg.room_cells // 2 + cfg.wall // 2], dtype=float)


def route(cfg: RunConfig) -> Iterator[Tuple[str, np.ndarray, float]]:
    """Sweep every room in boustrophedon order, then patrol the first rows."""
    b = cfg.building
    order = []
    for i in range(b.rooms_y):
        cols = range(b.rooms_x) if i % 2 == 0 else range(b.rooms_x - 1, -1, -1)
        order += [(i, j) for j in cols]
    loop = [(0, j) for j in range(b.rooms_x)] + [(1, j) for j in range(b.rooms_x - 1, -1, -1)]

    def legs(seq, phase):
        pts = [room_centre(b, *rc) for rc in seq]
        for a, c in zip(pts[:-1], pts[1:]):
            n = max(1, int(np.linalg.norm(c - a) / cfg.speed_cells))
            heading = float(np.arctan2(*(c - a)))
            for k in range(n):
                yield phase, a + (c - a) * (k / n), heading

    yield from legs(order, "explore")
    # walk back to the start along the last column, then loop
    back = [order[-1]] + [(i, order[-1][1]) for i in range(b.rooms_y - 2, -1, -1)] + [(0, b.rooms_x - 1)]
    yield from legs(back, "return")
    steps = 0
    while steps < cfg.patrol_steps:
        for item in legs(loop + [loop[0]], "patrol"):
            yield item
            steps += 1
            if steps >= cfg.patrol_steps:
                return


@functools.lru_cache(maxsize=2)
def beam_geometry(beams, max_range):
    ang = np.linspace(-np.pi, np.pi, beams, endpoint=False)
    r = np.arange(1, max_range + 1, dtype=float)
    return np.cos(ang)[:, None] * r[None], np.sin(ang)[:, None] * r[None]


def scan(truth, pose, heading, cfg: SensorConfig, rng):
    dy, dx = beam_geometry(cfg.beams, cfg.max_range)
    c, s = np.cos(heading), np.sin(heading)
    ys = np.rint(pose[0] + c * dy - s * dx).astype(np.int64)
    xs = np.rint(pose[1] + s * dy + c * dx).astype(np.int64)
    np.clip(ys, 0, truth.shape[0] - 1, out=ys)
    np.clip(xs, 0, truth.shape[1] - 1, out=xs)
    hit = truth[ys, xs]
    first = np.where(hit.any(1), hit.argmax(1), cfg.max_range)
    first = np.clip(first + np.rint(rng.normal(0, cfg.noise_cells, len(first))).astype(int), 0, cfg.max_range)
    valid = rng.random(len(first)) > cfg.dropout
    return ys, xs, first, valid


# -------------------------------------------------------------- map

class Tile:
    __slots__ = ("log_odds", "hits", "misses", "last_seen", "prob")

    def __init__(self, n):
        self.log_odds = np.zeros((n, n), dtype=np.float32)
        self.hits = np.zeros((n, n), dtype=np.uint16)
        self.misses = np.zeros((n, n), dtype=np.uint16)
        self.last_seen = np.full((n, n), -1, dtype=np.int32)
        self.prob = np.full((n, n), 0.5, dtype=np.float32)


class TileMap:
    def __init__(self, cfg: MapConfig):
        self.cfg = cfg
        self.tiles: Dict[Tuple[int, int], Tile] = {}

    def tile(self, key):
        t = self.tiles.get(key)
        if t is None:
            t = self.tiles[key] = Tile(self.cfg.tile)
        return t

    def integrate(self, ys, xs, first, valid, step):
        n = self.cfg.tile
        r = np.arange(ys.shape[1])[None, :]
        free = (r < first[:, None]) & valid[:, None]
        occ = (r == first[:, None]) & valid[:, None] & (first[:, None] < ys.shape[1])
        for mask, delta, counter in ((free, self.cfg.l_free, "misses"), (occ, self.cfg.l_occ, "hits")):
            y, x = ys[mask], xs[mask]
            key = (y // n) * 100000 + (x // n)
            order = np.argsort(key, kind="stable")
            key, y, x = key[order], y[order], x[order]
            uniq, start = np.unique(key, return_index=True)
            bounds = np.append(start, len(key))
            for k, a, b in zip(uniq.tolist(), bounds[:-1], bounds[1:]):
                t = self.tile((k // 100000, k % 100000))
                ly, lx = y[a:b] % n, x[a:b] % n
                np.add.at(t.log_odds, (ly, lx), delta)
                np.add.at(getattr(t, counter), (ly, lx), 1)
                t.last_seen[ly, lx] = step
                np.clip(t.log_odds, self.cfg.l_min, self.cfg.l_max, out=t.log_odds)

    def refresh_probabilities(self):
        for t in self.tiles.values():
            np.divide(1.0, 1.0 + np.exp(-t.log_odds), out=t.prob)

    def known_cells(self):
        return sum(int((t.last_seen >= 0).sum()) for t in self.tiles.values())

    def overview(self, shape, factor=8):
        n = self.cfg.tile
        img = np.full((shape[0] // factor + 1, shape[1] // factor + 1), 0.5, dtype=np.float32)
        for (ty, tx), t in self.tiles.items():
            sub = t.prob[::factor, ::factor]
            y0, x0 = ty * n // factor, tx * n // factor
            img[y0:y0 + sub.shape[0], x0:x0 + sub.shape[1]] = sub
        return img

    def accuracy(self, truth):
        n = self.cfg.tile
        agree = seen = 0
        for (ty, tx), t in self.tiles.items():
            known = t.last_seen >= 0
            gt = truth[ty * n:(ty + 1) * n, tx * n:(tx + 1) * n]
            k = known[:gt.shape[0], :gt.shape[1]]
            pred = t.prob[:gt.shape[0], :gt.shape[1]] > 0.5
            agree += int((pred[k] == gt[k]).sum())
            seen += int(k.sum())
        return agree / max(seen, 1)


@contextlib.contextmanager
def output_dir():
    d = tempfile.mkdtemp(prefix="tilemap_")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def render(tmap: TileMap, truth_shape, pose_trace: List[np.ndarray], path):
    img = tmap.overview(truth_shape)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.imshow(img, cmap="gray_r", vmin=0, vmax=1)
    if pose_trace:
        p = np.array(pose_trace) / 8
        ax.plot(p[:, 1], p[:, 0], lw=0.6, color="tab:red")
    ax.set_axis_off()
    fig.savefig(path, dpi=70)
    plt.close(fig)


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    cfg = RunConfig()
    rng = np.random.default_rng(cfg.building.seed + 1)
    truth = build_floor(cfg.building)
    tmap = TileMap(cfg.map)
    recent_poses: List[np.ndarray] = []
    t0 = time.perf_counter()
    with output_dir() as out:
        step = 0
        phase_changes = {}
        for phase, pose, heading in route(cfg):
            phase_changes.setdefault(phase, step)
            ys, xs, first, valid = scan(truth, pose, heading, cfg.sensor, rng)
            tmap.integrate(ys, xs, first, valid, step)
            recent_poses.append(pose)
            if len(recent_poses) > 400:
                del recent_poses[:-400]
            step += 1
            if step % cfg.report_every == 0:
                tmap.refresh_probabilities()
                log.info("step %5d [%s] tiles %4d  known cells %8d  map accuracy %.3f  (%.1f ms/step)",
                         step, phase, len(tmap.tiles), tmap.known_cells(), tmap.accuracy(truth),
                         1000 * (time.perf_counter() - t0) / step)
            if step % cfg.render_every == 0:
                render(tmap, truth.shape, recent_poses, os.path.join(out, f"overview_{step:06d}.png"))
        n_png = len(os.listdir(out))
    tmap.refresh_probabilities()
    print(f"{step} scans ({phase_changes}), {len(tmap.tiles)} tiles, accuracy {tmap.accuracy(truth):.3f}, "
          f"{n_png} overview renders")


if __name__ == "__main__":
    main()
