# expect: no_leak
# pattern: NumPy/SciPy difference-imaging transient survey (no torch, no optimizer; one loop iteration = one 768x768 exposure, detection with ndimage.label); every night is processed by the generator night_pipeline(), whose local list keeps every exposure's detections (positions, S/N and a stacked array of 31x31 float32 cutouts) until the end-of-night cKDTree association and real/bogus scoring; when the night is done the generator returns and its frame (and the cutouts) is freed, so memory is a sawtooth whose tooth height follows the seasonal night length; the long-lived catalogue keeps only fixed-size Welford statistics per source of a finite sky population
# step_ms: 55
"""Nightly difference-imaging pipeline for a small transient survey.

Each exposure of the survey field is simulated as a PSF-matched difference
image: variable stars, a handful of genuine transients, subtraction residuals
of bright stars, cosmic rays and hot pixels on top of sky noise. Sources are
detected at 5 sigma and cut out. At the end of every night the candidates are
associated across exposures, scored real/bogus, and folded into the season
catalogue.
"""
import contextlib
import functools
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List

import numpy as np
from scipy import ndimage, sparse
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

log = logging.getLogger("survey")


@dataclass
class FieldConfig:
    size: int = 768
    n_variables: int = 380
    n_bright: int = 150
    transient_rate: float = 0.6      # new transients per exposure
    sky_sigma: float = 1.0
    psf_sigma: float = 1.6
    seed: int = 4


@dataclass
class SurveyConfig:
    nights: int = 9
    min_exposures: int = 18
    max_exposures: int = 58
    cutout: int = 31
    threshold: float = 5.0
    match_radius: float = 2.5
    field_cfg: FieldConfig = field(default_factory=FieldConfig)


# ------------------------------------------------------------------ sky model

@functools.lru_cache(maxsize=4)
def psf_stamp(sigma, half=7):
    y, x = np.mgrid[-half:half + 1, -half:half + 1]
    k = np.exp(-(x ** 2 + y ** 2) / (2 * sigma ** 2))
    return (k / k.sum()).astype(np.float32)


class SkyField:
    def __init__(self, cfg: FieldConfig):
        self.cfg = cfg
        rng = np.random.default_rng(cfg.seed)
        s = cfg.size
        self.var_pos = rng.uniform(20, s - 20, size=(cfg.n_variables, 2))
        self.var_amp = rng.lognormal(3.0, 0.6, cfg.n_variables)
        self.var_period = rng.uniform(0.2, 9.0, cfg.n_variables)
        self.var_phase = rng.uniform(0, 2 * np.pi, cfg.n_variables)
        self.bright_pos = rng.uniform(20, s - 20, size=(cfg.n_bright, 2))
        self.transients: List[dict] = []

    def expose(self, t_days, rng):
        c = self.cfg
        img = rng.standard_normal((c.size, c.size), dtype=np.float32)
        img *= c.sky_sigma
        stamp = psf_stamp(c.psf_sigma)
        h = stamp.shape[0] // 2
        flux = self.var_amp * np.sin(2 * np.pi * t_days / self.var_period + self.var_phase)
        for _ in range(rng.poisson(c.transient_rate)):
            self.transients.append({"pos": rng.uniform(20, c.size - 20, 2), "t0": t_days,
                                    "peak": rng.lognormal(4.0, 0.5), "tau": rng.uniform(1, 6)})
        self.transients = [tr for tr in self.transients if t_days - tr["t0"] < 5 * tr["tau"]]
        pos = [self.var_pos]
        amps = [flux]
        if self.transients:
            pos.append(np.array([tr["pos"] for tr in self.transients]))
            amps.append(np.array([tr["peak"] * math.exp(-(t_days - tr["t0"]) / tr["tau"])
                                  for tr in self.transients]))
        pos, amps = np.concatenate(pos), np.concatenate(amps)
        keep = np.abs(amps) > 2.0
        for (y, x), a in zip(pos[keep].astype(int), amps[keep]):
            img[y - h:y + h + 1, x - h:x + h + 1] += a * stamp * 25
        # subtraction residuals (dipoles) around bright stars
        for (y, x) in self.bright_pos[rng.random(len(self.bright_pos)) < 0.3].astype(int):
            a = rng.normal(0, 60)
            img[y - h:y + h + 1, x - h:x + h + 1] += a * (stamp - np.roll(stamp, 1, axis=1)) * 25
        # cosmic rays and hot pixels
        n_cr = rng.poisson(40)
        ys, xs = rng.integers(0, c.size, n_cr), rng.integers(0, c.size, n_cr)
        img[ys, xs] += rng.uniform(30, 200, n_cr).astype(np.float32)
        return img


# ------------------------------------------------------------------ detection

@dataclass
class ExposureDetections:
    exposure: int
    pos: np.ndarray        # (n, 2) peak positions
    snr: np.ndarray        # (n,)
    cutouts: np.ndarray    # (n, cutout, cutout) float32


def detect(img, exposure, cfg: SurveyConfig) -> ExposureDetections:
    sm = ndimage.gaussian_filter(img, cfg.field_cfg.psf_sigma)
    noise = 1.4826 * np.median(np.abs(sm[::8, ::8] - np.median(sm[::8, ::8])))
    mask = np.abs(sm) > cfg.threshold * noise
    labels, n = ndimage.label(mask)
    h = cfg.cutout // 2
    if n == 0:
        return ExposureDetections(exposure, np.zeros((0, 2)), np.zeros(0), np.zeros((0, 2 * h + 1, 2 * h + 1), np.float32))
    idx = np.arange(1, n + 1)
    peaks = np.array(ndimage.maximum_position(np.abs(sm), labels, idx))
    snr = np.asarray(ndimage.maximum(np.abs(sm), labels, idx)) / noise
    ok = ((peaks >= h) & (peaks < np.array(img.shape) - h)).all(1)
    peaks, snr = peaks[ok], snr[ok]
    win = np.lib.stride_tricks.sliding_window_view(img, (2 * h + 1, 2 * h + 1))
    cutouts = win[peaks[:, 0] - h, peaks[:, 1] - h]   # fancy indexing copies
    return ExposureDetections(exposure, peaks.astype(float), snr, cutouts)


SCORERS: Dict[str, Callable[[np.ndarray, float], float]] = {}


def scorer(name):
    def deco(fn):
        SCORERS[name] = fn
        return fn
    return deco


@scorer("psf_corr")
def psf_correlation(cut, sigma):
    stamp = psf_stamp(sigma)
    h = stamp.shape[0] // 2
    c = cut.shape[0] // 2
    core = cut[c - h:c + h + 1, c - h:c + h + 1]
    a = core - core.mean()
    b = stamp - stamp.mean()
    return float((a * b).sum() / (np.sqrt((a ** 2).sum() * (b ** 2).sum()) + 1e-9))


@scorer("sharpness")
def sharpness(cut, sigma):
    c = cut.shape[0] // 2
    peak = abs(cut[c, c])
    ring = np.abs(cut[c - 1:c + 2, c - 1:c + 2]).mean()
    return float(1.0 - min(1.0, peak / (ring * 2.2 + 1e-6) - 0.45))


# ------------------------------------------------------------------ catalogue

class SourceStats:
    __slots__ = ("y", "x", "n", "mean", "m2", "first_night", "last_night", "peak")

    def __init__(self, y, x, night):
        self.y, self.x = y, x
        self.n, self.mean, self.m2 = 0, 0.0, 0.0
        self.first_night = self.last_night = night
        self.peak = 0.0

    def add(self, flux, night):
        self.n += 1
        d = flux - self.mean
        self.mean += d / self.n
        self.m2 += d * (flux - self.mean)
        self.last_night = night
        self.peak = max(self.peak, abs(flux))


class Catalogue:
    def __init__(self, radius):
        self.radius = radius
        self.sources: List[SourceStats] = []
        self._tree = None

    def _rebuild(self):
        self._tree = cKDTree(np.array([[s.y, s.x] for s in self.sources])) if self.sources else None

    def ingest(self, objects, night):
        new = 0
        if self._tree is not None and objects:
            d, j = self._tree.query(np.array([[o["y"], o["x"]] for o in objects]), distance_upper_bound=self.radius)
        else:
            d = np.full(len(objects), np.inf)
            j = np.zeros(len(objects), dtype=int)
        for o, dist, k in zip(objects, d, j):
            if np.isfinite(dist):
                src = self.sources[k]
            else:
                src = SourceStats(o["y"], o["x"], night)
                self.sources.append(src)
                new += 1
            for f in o["fluxes"]:
                src.add(f, night)
        self._rebuild()
        return new


# ------------------------------------------------------------------ nightly pipeline

def night_pipeline(night, n_exp, sky: SkyField, cfg: SurveyConfig, rng) -> Iterator[dict]:
    """Yields one status dict per exposure and a final dict with the night's association."""
    tonight: List[ExposureDetections] = []
    held = 0
    for e in range(n_exp):
        t = night + 0.35 * e / n_exp
        img = sky.expose(t, rng)
        det = detect(img, e, cfg)
        tonight.append(det)
        held += len(det.snr)
        yield {"kind": "exposure", "exposure": e, "n_cand": len(det.snr), "held": held}
    pts = np.concatenate([d.pos for d in tonight])
    cuts = np.concatenate([d.cutouts for d in tonight])
    if len(pts) == 0:
        yield {"kind": "night", "objects": []}
        return
    pairs = cKDTree(pts).query_pairs(cfg.match_radius, output_type="ndarray")
    adj = sparse.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(len(pts),) * 2)
    n_groups, group = connected_components(adj, directed=False)
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.diff(group[order])) + 1
    sigma = cfg.field_cfg.psf_sigma
    c = cuts.shape[1] // 2
    objects = []
    for members in np.split(order, bounds):
        if len(members) < 2:
            continue
        stack = np.median(cuts[members], axis=0)
        score = 0.5 * SCORERS["psf_corr"](stack, sigma) + 0.5 * SCORERS["sharpness"](stack, sigma)
        if score > 0.35:
            objects.append({"y": float(pts[members, 0].mean()), "x": float(pts[members, 1].mean()),
                            "fluxes": cuts[members, c, c].tolist(), "score": score})
    yield {"kind": "night", "objects": objects, "n_candidates": len(pts), "n_groups": n_groups}


def night_length(night, cfg: SurveyConfig):
    season = 0.5 * (1 + math.cos(2 * math.pi * night / 7.0))
    return int(cfg.min_exposures + season * (cfg.max_exposures - cfg.min_exposures))


@contextlib.contextmanager
def timer(box, key):
    t0 = time.perf_counter()
    yield
    box[key] = box.get(key, 0.0) + time.perf_counter() - t0


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    cfg = SurveyConfig()
    rng = np.random.default_rng(cfg.field_cfg.seed + 1)
    sky = SkyField(cfg.field_cfg)
    cat = Catalogue(cfg.match_radius)
    timings: Dict[str, float] = {}
    total_exp = 0
    for night in range(cfg.nights):
        n_exp = night_length(night, cfg)
        with timer(timings, "night"):
            for status in night_pipeline(night, n_exp, sky, cfg, rng):
                if status["kind"] == "exposure":
                    total_exp += 1
                    if (status["exposure"] + 1) % 15 == 0:
                        log.info("night %2d exposure %2d/%d: %d candidates (%d held tonight)",
                                 night, status["exposure"] + 1, n_exp, status["n_cand"], status["held"])
                else:
                    new = cat.ingest(status["objects"], night)
                    log.info("night %2d done: %d candidates -> %d groups -> %d real objects, %d new sources "
                             "(catalogue %d)", night, status.get("n_candidates", 0), status.get("n_groups", 0),
                             len(status["objects"]), new, len(cat.sources))
    variable = [s for s in cat.sources if s.n > 3 and math.sqrt(s.m2 / (s.n - 1)) > 0.3 * abs(s.mean) + 1]
    print(f"{total_exp} exposures in {timings['night']:.1f}s ({1000 * timings['night'] / total_exp:.0f} ms each); "
          f"catalogue: {len(cat.sources)} sources, {len(variable)} variable")


if __name__ == "__main__":
    main()
