"""The verdict on one signal (``SignalVerdict``), and how one window of a series earns it:
the fitted line and its tests, the steady-rise test, and a rise that stopped for long."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, Optional, Tuple

import numpy as np
from scipy import special

from memprobe.analysis.options import DetectOptions
from memprobe.analysis.series import Array, reduce_points, steps_per_second
from memprobe.analysis.trend import (
    fit_trend,
    growth_stopped,
    rise_over_band,
    steady_rise,
    upper_bound,
)
from memprobe.analysis.wording import (
    fmt_rate,
    more_needed,
    more_to_clear,
    standard_error,
)
from memprobe.record import SignalSummary

LEAK, NO_LEAK, INCONCLUSIVE = "leak", "no_leak", "inconclusive"
# a flat stretch ends a rise when it lasts this many times the longest pause between the rises
# before it (see _stopped_for_long)
STALL_PAUSES = 2.0
STOP_SHARE = 0.25  # a stop is believed once flat for a quarter as long as the rise before it
MIN_RISES = 3

__all__ = ["INCONCLUSIVE", "LEAK", "NO_LEAK", "SignalVerdict", "judge_window"]


@dataclass(frozen=True)
class SignalVerdict:
    """The verdict on one signal, and everything a report needs to show why.

    ``slope``, ``ci_low`` and ``ci_high`` are per unit of ``axis`` (per step or
    per second). The fitted line is ``intercept + slope * (x - x0)``, drawn
    from ``x0`` (the end of the warm-up) to ``x_end``.
    """

    verdict: str
    unit: str
    axis: str
    family: str
    reason: str
    n: int
    slope: float = 0.0
    slope_per_step: Optional[float] = None
    slope_per_s: Optional[float] = None
    ci_low: float = 0.0
    ci_high: float = 0.0
    confidence: float = 0.0
    p_value: float = 1.0
    warmup_end_x: Optional[float] = None
    x0: Optional[float] = None
    x_end: Optional[float] = None
    t_end: Optional[float] = None
    intercept: Optional[float] = None
    last_value: Optional[float] = None
    growth: float = 0.0
    steps_per_s: Optional[float] = None
    needed: Optional[str] = None
    floor: bool = False
    plateau: bool = False
    inflation: float = 1.0
    # grows significantly at or above the rate that counts, clear of noise or not:
    # enough to back up another signal's leak (see evidence.corroborate)
    growing: bool = False
    # ... and by at least what counts in all over the window: enough to keep a run from
    # being called "no leak" (see run.run_verdict)
    substantial: bool = False
    # a leak by the steady-rise test only (no clearance over the noise band): see
    # evidence.steady_needs_backing
    steady: bool = False

    def held_back(self, why: str, needed: Optional[str]) -> SignalVerdict:
        """This verdict made inconclusive by something that explains its growth (``why``,
        added to the reason), backing nothing else meanwhile; ``needed``: what would settle
        it."""
        return replace(
            self,
            verdict=INCONCLUSIVE,
            growing=False,
            substantial=False,
            reason=f"{self.reason}, {why}",
            needed=needed,
        )

    def summary(self) -> SignalSummary:
        """The per-signal entry of ``RunRecord.signals``."""
        return SignalSummary(
            verdict=self.verdict,
            slope_per_step=self.slope_per_step,
            slope_per_s=self.slope_per_s,
            ci_low=self.ci_low,
            ci_high=self.ci_high,
            confidence=round(self.confidence, 6),
            warmup_end_x=self.warmup_end_x,
            n=self.n,
            unit=self.unit,
            axis=self.axis,
            family=self.family,
            x0=self.x0,
            x_end=self.x_end,
            intercept=self.intercept,
            reason=self.reason,
            needed=self.needed,
            floor=self.floor,
            plateau=self.plateau,
        )


def judge_window(
    xw: Array,
    yw: Array,
    tw: Optional[Array],
    options: DetectOptions,
    alpha: float,
    base: Dict[str, Any],
    signal: str,
    n_tests: int,
    floor: bool,
    steady: bool = True,
) -> SignalVerdict:
    """Judge one window. ``steady``: also accept a steady rise (``trend.steady_rise``), on
    the whole window only: on the recent half, the tail of a long warm-up looks steady."""
    axis, unit, fam = base["axis"], base["unit"], base["family"]
    word = "steps" if axis == "step" else "seconds"
    span = float(xw[-1] - xw[0])
    sps = steps_per_second(xw, tw) if axis == "step" and tw is not None else None
    xj, yj = xw, yw
    z_crit = float(-special.ndtri(alpha))
    tr = fit_trend(xj, yj, z_crit, options.max_points)
    level = float(np.median(yw))
    rate_thr = options.rate_threshold(unit, axis, fam, signal)
    thr = max(rate_thr, options.growth_threshold(unit, level, fam) / span)
    growth = tr.slope * span
    significant = tr.p_value < alpha and tr.ci_low > 0
    common: Dict[str, Any] = dict(
        n=len(xj),
        slope=tr.slope,
        slope_per_step=tr.slope if axis == "step" else None,
        slope_per_s=(tr.slope * sps if sps else None) if axis == "step" else tr.slope,
        ci_low=tr.ci_low,
        ci_high=tr.ci_high,
        p_value=tr.p_value,
        x0=tr.x0,
        x_end=float(xw[-1]),
        t_end=float(tw[-1]) if tw is not None else None,
        intercept=tr.intercept,
        last_value=float(yw[-1]),
        growth=growth,
        steps_per_s=sps,
        floor=floor,
        inflation=tr.inflation,
        growing=tr.ci_low > 0 and tr.slope >= rate_thr,
        substantial=(tr.ci_low > 0 and tr.slope >= rate_thr and growth >= thr * span and thr > 0),
        **base,
    )
    fmt = fmt_rate(unit, word)
    clear = significant and rise_over_band(xj, yj, tr.slope) >= options.min_rise_over_band
    steady_p = (
        None
        if clear or tr.slope < thr or not steady
        else steady_rise(xj, yj, axis == "step", exact=_exact_count(signal, fam))
    )
    if steady_p is not None and steady_p < alpha:
        # a staircase or convex rise that the line-and-noise tests cannot see as clear
        clear = True
        common["p_value"] = min(tr.p_value, steady_p)
    if clear and tr.slope >= thr:
        limit = options.plateau_ratio * tr.slope
        if growth_stopped(xj, yj, limit, options.max_points):
            return SignalVerdict(
                NO_LEAK,
                reason="grew, then stopped (plateau)",
                confidence=0.9,
                plateau=True,
                **common,
            )
        conf = max(0.0, min(1.0, 1.0 - float(common["p_value"]) * max(1, n_tests)))
        what = "floor of a sawtooth rises" if floor else "grows"
        if steady_p is not None:
            what = "grows steadily"
        return SignalVerdict(
            LEAK,
            reason=f"{what} {fmt(tr.slope)}",
            confidence=conf,
            steady=steady_p is not None,
            **common,
        )
    se = standard_error(tr, z_crit)
    growing = bool(common["growing"])
    upper = tr.ci_high
    if not growing and upper >= thr:
        # A no-leak claim errs by missing a leak, not by a false alarm: the run is no_leak
        # only where what it rests on is, so its bound is at the run's miss level (1 -
        # confidence, one-sided), not split over the signals like the false-alarm budget
        z_miss = float(-special.ndtri(1.0 - options.confidence))
        upper = upper_bound(xj, yj, min(z_miss, z_crit), tr.inflation, options.max_points)
    if upper < thr and not growing:
        conf = float(special.ndtr((thr - tr.slope) / se)) if se > 0 else 1.0
        why = "floor of a sawtooth is flat" if floor else "no growth"
        return SignalVerdict(NO_LEAK, reason=f"{why} above {fmt(thr)}", confidence=conf, **common)
    if not growing and growth_stopped(xj, yj, thr, options.max_points):
        return SignalVerdict(
            NO_LEAK, reason=f"no growth above {fmt(thr)} lately", confidence=0.9, **common
        )
    total = options.growth_threshold(unit, level, fam)
    if (
        growing
        and not clear
        and _stopped_for_long(
            xj, yj, tr.slope, max(rate_thr, options.plateau_ratio * tr.slope), total, options
        )
    ):
        # rose (a buffer filled mid-run, a second phase's one allocation), too unevenly to
        # be clear of its noise, and has been flat since, for longer than it would have
        # taken the same rise to add up to growth that counts
        return SignalVerdict(
            NO_LEAK,
            reason=f"grew, then no growth above {fmt(rate_thr)} lately",
            confidence=0.9,
            plateau=True,
            **{**common, "growing": False, "substantial": False},
        )
    if clear and tr.slope >= rate_thr:
        # growing at a rate that counts, but not yet by enough in total
        more = max(1.0, (thr - tr.slope) * span / tr.slope)
        return SignalVerdict(
            INCONCLUSIVE,
            reason=f"grows {fmt(tr.slope)}, not yet {fmt(thr * span).split('/')[0]} in all",
            needed=f"about {more:.0f} more {word}",
            **common,
        )
    if clear:
        reason = f"grows {fmt(tr.slope)}, under the {fmt(thr)} that counts"
    else:
        reason = f"not clear of its noise ({fmt(tr.ci_low)} .. {fmt(tr.ci_high)})"
    if not clear and tr.ci_low > 0 and tr.slope >= thr:
        # the slope's interval is clear of zero: the trend test or the rise over the noise
        # band holds it back, and that is what more data must settle
        z_trend = float(-special.ndtri(min(max(tr.p_value, 1e-300), 0.5)))
        ratio = rise_over_band(xj, yj, tr.slope)
        needed = more_to_clear(z_trend, z_crit, ratio, options.min_rise_over_band, span, word)
    else:
        needed = more_needed(tr, thr, z_crit, span, word)
    return SignalVerdict(INCONCLUSIVE, reason=reason, needed=needed, **common)


def _exact_count(signal: str, fam: str) -> bool:
    """An exact count read at every sample (a container's length, live tensors or
    modules), which the steady-rise test may cut finer (``trend.steady_rise``); not heap
    blocks, which move with every temporary."""
    return signal.startswith("container:") or fam == "object"


def _stopped_for_long(
    x: Array, y: Array, slope: float, limit: float, total: float, options: DetectOptions
) -> bool:
    """The series rose, then stopped: its last third grows slower than ``limit``
    (``growth_stopped``: a quarter of the window's slope, ``plateau_ratio``, as a clear rise
    that levels off; an allocator's pages still faulted in at a few KiB/s are no rise), and
    the flat stretch since its last rise, where it rose by less than an eighth of what
    counts, is longer than ``STALL_PAUSES`` times the longest pause between the rises before
    it, and long enough that the window's own ``slope`` would have added what counts over it.

    An allocator draws a leak as a staircase (an arena of 1-2 MiB, then a pause while it
    fills): a flat stretch as long as one of its treads is no end of the rise; a buffer that
    filled mid-run (a replay memory, a teacher's outputs) rose in many small steps, then
    stays flat for longer than any of its pauses."""
    n = len(x)
    k = n - max(6, n // 3)
    if k <= 0 or slope <= 0:
        return False
    flat, longest = _last_rise(x, y, total / 8.0, options.max_points)
    if flat is None or flat < STALL_PAUSES * longest or slope * flat < total:
        return False
    if flat < STOP_SHARE * (float(x[-1] - x[0]) - flat):
        # a few seconds flat at the end of a long rise: the program's loop may just have
        # ended (a batch job cleaning up its files), not its growth
        return False
    return growth_stopped(x, y, limit, options.max_points)


def _last_rise(x: Array, y: Array, eps: float, max_points: int) -> Tuple[Optional[float], float]:
    """(x-span from the last rise to the end, the longest pause between two rises before
    it). A rise is the block medians climbing ``eps`` above the level of the last one;
    None when the series rose fewer than ``MIN_RISES`` times: one or two jumps tell nothing
    of how long the pauses between them are (two treads of a staircase, or a buffer
    allocated in one go)."""
    xr, yr = reduce_points(x, y, max_points)
    level = float(yr[0])
    last: Optional[float] = None
    longest = 0.0
    rises = 0
    for xi, yi in zip(xr, yr):
        if yi > level + eps:
            if last is not None:
                longest = max(longest, float(xi) - last)
            last, level = float(xi), float(yi)
            rises += 1
    if last is None or rises < MIN_RISES:
        return None, longest
    return float(x[-1]) - last, longest
