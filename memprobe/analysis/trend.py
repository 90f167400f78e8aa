"""Trend estimators: Theil-Sen slope, Mann-Kendall test, sawtooth floor, plateau.

The Mann-Kendall test and the Theil-Sen interval assume independent noise.
Memory series are not: a random walk, a sawtooth or a level shift have
residuals that stay on one side of the line for long stretches, and taken at
face value every one of them would be a "significant trend". The variance of
the Mann-Kendall statistic is therefore inflated by the autocorrelation of the
ranks of the detrended series (Hamed & Rao, 1998, J. Hydrology 204:182-196),
and the Theil-Sen interval is widened by the same factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import numpy.typing as npt
from scipy import special, stats

from memprobe.analysis.series import Array, reduce_points

BAND_BLOCKS = 16
MIN_FLOOR_POINTS = 5  # periods needed before a sawtooth's floor is judged


@dataclass(frozen=True)
class Trend:
    """A robust line through a window, with its uncertainty.

    ``slope`` and the interval are per unit of x; ``intercept`` is the value of
    the line at ``x0`` (the first x of the window). ``p_value`` is one-sided
    (growth), corrected for autocorrelation; ``inflation`` is the factor by
    which autocorrelation widened the test (1 = independent noise).
    """

    slope: float
    intercept: float
    x0: float
    ci_low: float
    ci_high: float
    tau: float
    z: float
    p_value: float
    inflation: float
    n: int


def fit_trend(x: Array, y: Array, z_crit: float, max_points: int = 200) -> Trend:
    """Theil-Sen line and Mann-Kendall test, interval at the two-sided level ``z_crit``."""
    xr, yr = reduce_points(x, y, max_points)
    n = len(xr)
    x0 = float(xr[0])
    if n < 3 or float(np.ptp(yr)) == 0.0 or float(np.ptp(xr)) == 0.0:
        level = float(yr[0]) if n else 0.0
        return Trend(0.0, level, x0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, n)
    first = stats.theilslopes(yr, xr, alpha=0.5)
    slope = float(first[0])
    resid = yr - slope * xr
    inflation = _hamed_rao_inflation(resid)
    ci_low, ci_high = _interval(xr, yr, z_crit, inflation)
    tau, p_one = stats.kendalltau(xr, yr, alternative="greater")
    tau = 0.0 if not math.isfinite(float(tau)) else float(tau)
    z_raw = _z_from_p(float(p_one), tau, n)
    z = z_raw / math.sqrt(inflation)
    p = float(special.ndtr(-z))
    intercept = float(np.median(yr - slope * (xr - x0)))
    return Trend(
        slope=slope,
        intercept=intercept,
        x0=x0,
        ci_low=ci_low,
        ci_high=ci_high,
        tau=tau,
        z=z,
        p_value=p,
        inflation=inflation,
        n=n,
    )


def upper_bound(x: Array, y: Array, z: float, inflation: float, max_points: int) -> float:
    """Theil-Sen's upper bound on the slope at the one-sided normal level ``z``, widened by
    ``inflation`` as ``fit_trend`` widens its interval."""
    xr, yr = reduce_points(x, y, max_points)
    if len(xr) < 3 or float(np.ptp(yr)) == 0.0 or float(np.ptp(xr)) == 0.0:
        return 0.0
    return _interval(xr, yr, z, inflation)[1]


def _interval(xr: Array, yr: Array, z: float, inflation: float) -> tuple[float, float]:
    """Theil-Sen's interval at the two-sided normal level ``z``, widened by the same factor
    as the Mann-Kendall test: theilslopes builds its rank interval from z * sqrt(Var S), so
    scaling z scales Var S."""
    conf = min(1.0 - 1e-12, 2.0 * float(special.ndtr(z * math.sqrt(inflation))) - 1.0)
    ts = stats.theilslopes(yr, xr, alpha=conf)
    return float(ts[2]), float(ts[3])


def _z_from_p(p_one: float, tau: float, n: int) -> float:
    if math.isfinite(p_one) and 0.0 < p_one < 1.0:
        return float(-special.ndtri(p_one))
    if not math.isfinite(p_one):
        return 0.0
    # p underflowed (or is exactly 1): fall back on the untied normal approximation
    var_tau = 2.0 * (2 * n + 5) / (9.0 * n * (n - 1))
    return tau / math.sqrt(var_tau)


def _hamed_rao_inflation(resid: Array) -> float:
    """n / n* of Hamed & Rao: variance inflation of Mann-Kendall's S.

    Only lags whose rank autocorrelation is significant at 5 % count, as in the
    paper. Never below 1: negative autocorrelation does not buy confidence.
    """
    n = len(resid)
    if n < 8 or float(np.ptp(resid)) == 0.0:
        return 1.0
    r = stats.rankdata(resid)
    r = r - r.mean()
    denom = float(np.dot(r, r))
    if denom == 0.0:
        return 1.0
    acf = np.correlate(r, r, mode="full")[n:] / denom  # lags 1 .. n-1
    lags = np.arange(1, n, dtype=np.float64)
    significant = np.abs(acf) > 1.96 / math.sqrt(n)
    weights = (n - lags) * (n - lags - 1) * (n - lags - 2)
    total = float(np.sum(weights[significant] * acf[significant]))
    factor = 1.0 + 2.0 * total / (n * (n - 1) * (n - 2))
    return max(1.0, factor)


@dataclass(frozen=True)
class Sawtooth:
    """A grow-and-clear series: its typical period (in samples) and the indices of
    its floor, one per period; ``floor`` is None while there are too few periods."""

    period: int
    floor: Optional[npt.NDArray[np.intp]]
    drops: tuple[int, ...] = ()  # index of the last sample before each drop


def sawtooth_floor(x: Array, y: Array, first_tooth: bool = False) -> Optional[Sawtooth]:
    """Indices of the floor of a grow-and-clear series, or None when it is no sawtooth.

    A sawtooth drop is a fall much larger than the step-to-step noise that is
    not just the way back from a one-point spike, nor a dip that jumps back up. With two
    or more of them, the floor is the minimum over consecutive windows one typical period
    long. ``first_tooth``: one drop is a sawtooth too (with too few periods) when it gave back
    most of what the series rose before it, while the series has not climbed back past
    where it fell from: a count cleared once and filling again, as a batch's objects do
    between one release and the next.
    """
    n = len(y)
    if n < 12:
        return None
    d = np.diff(y)
    med = float(np.median(d))
    mad = float(np.median(np.abs(d - med))) * 1.4826
    threshold = max(5.0 * mad, 0.2 * float(np.ptp(y)))
    if threshold <= 0:
        return None
    # neither the way back from a one-point spike, nor a dip that jumps back within three
    # samples (an allocator handing a big block back while the next one is being built)
    drops = [
        i
        for i in range(len(d))
        if d[i] < -threshold
        and not (i > 0 and d[i - 1] > 0.5 * -d[i])
        and not (i + 1 < len(d) and float(np.max(d[i + 1 : i + 4])) > 0.6 * -d[i])
    ]
    if first_tooth and len(drops) == 1 and _first_tooth(y, drops[0]):
        return Sawtooth(period=drops[0] + 1, floor=None, drops=tuple(drops))
    if len(drops) < 2:
        return None
    period = int(np.median(np.diff(drops)))
    if period < 3:
        return None
    start = drops[0] + 1  # begin at a floor
    m = (n - start) // period
    if m < MIN_FLOOR_POINTS:
        return Sawtooth(period=period, floor=None, drops=tuple(drops))
    idx = start + np.arange(m * period).reshape(m, period)
    rows = np.argmin(y[idx], axis=1)
    pick: npt.NDArray[np.intp] = idx[np.arange(m), rows]
    return Sawtooth(period=period, floor=pick)


# a series' last samples, at most this many, fallen below half its span: let go at the end
END_LET_GO = 2


def let_go_at_end(x: Array, y: Array) -> int:
    """How many of the series' samples to judge: all, unless its last one or two fell by
    more than half of everything the series spanned before them, and nothing fell before
    (a count that climbed the whole run and that the program let go as it finished, an
    ``ExitStack`` closing at the end of ``main()``). What a program frees as it finishes
    is no tooth: no refill follows to tell it from a leak cleaned up at exit."""
    n = len(y)
    for k in range(1, END_LET_GO + 1):
        head = y[: n - k]
        if len(head) < 12:
            break
        span = float(np.ptp(head))
        if span <= 0 or float(np.max(y[n - k :])) > float(head[-1]) - 0.5 * span:
            continue
        if sawtooth_floor(x[: n - k], head, first_tooth=True) is None:
            return n - k
        break
    return n


def _first_tooth(y: Array, drop: int) -> bool:
    """The one drop at ``drop`` gave back at least three quarters of all the series had
    risen before it (a tooth, not a start-up that let a part of itself go), and the series
    has not climbed back past where it fell from."""
    if drop < 3:  # a tooth is seen rising first
        return False
    peak = float(y[drop])
    rose, fell = peak - float(y[0]), peak - float(y[drop + 1])
    return rose > 0 and fell >= 0.75 * rose and float(np.max(y[drop + 1 :])) < peak


def growth_stopped(x: Array, y: Array, limit: float, max_points: int) -> bool:
    """True when the last third of the window grows, at 90 % confidence, slower
    than ``limit`` per unit of x: growth that stopped (a plateau), not a leak."""
    if limit <= 0:
        return False
    n = len(x)
    k = n - max(6, n // 3)
    if k <= 0:
        return False
    xr, yr = reduce_points(x[k:], y[k:], max_points)
    if len(xr) < 6 or float(np.ptp(xr)) == 0.0:
        return False
    if float(np.ptp(yr)) == 0.0:
        return True
    res = stats.theilslopes(yr, xr, alpha=0.90)
    return float(res[3]) < limit


def rise_over_band(x: Array, y: Array, slope: float, blocks: int = BAND_BLOCKS) -> float:
    """How many times the fitted rise over the window exceeds the noise band.

    The band is the full range of the residuals of ``blocks`` block medians
    around the line. For a trend with stationary noise the ratio grows like
    n^1.5; for a driftless random walk - whose residuals wander as far as the
    line rises - it stays O(1) whatever n (99.5 % quantile ~4.5 at 16 blocks,
    measured over 3000 walks of 50 to 1000 points).
    """
    xb, yb = reduce_points(x, y, blocks)
    rise = slope * float(x[-1] - x[0])
    band = float(np.ptp(yb - slope * xb))
    if band <= 0.0:
        return math.inf if rise > 0 else 0.0
    return rise / band


STEADY_BLOCKS = 16
STEADY_BLOCKS_EXACT = 24
STEADY_MIN_BLOCKS = 12
STEADY_MIN_UPS = 5  # blocks that rise: several separate rises, not one level shift
STEADY_UP_FRACTION = 0.3  # an allocator's staircase rises in a third of the blocks
STEADY_DIP = 0.01  # a block median may dip below the one before by 1 % of the rise
STEADY_KEEPS_PACE = 0.4  # the second half rises at least this share of the first half's rise
STEADY_END_SLOPE = 0.35  # a quadratic's slope at the end, at least this share of its start


def steady_rise(
    x: Array, y: Array, steep_start: bool = False, exact: bool = False
) -> Optional[float]:
    """One-sided p-value-like figure when the series rises steadily, else None.

    ``steep_start``: one steep first block before an even climb does not make the rise a
    decelerating warm-up (on the step axis, where the program's start-up lies before the
    first step; on the clock, a preload still under way rises just that way).

    The window is cut into up to ``STEADY_BLOCKS`` equal-width blocks of at least 3
    points each, whose medians outvote a noisy point. ``exact``: the series is an exact
    count read at each sample (a container's length, live tensors), with no noise of its
    own: up to ``STEADY_BLOCKS_EXACT`` blocks of one point or more, so that a phase of
    two dozen samples can show its climb (an evaluation memo sampled every 0.15 s for 4 s
    on a busy machine). Steady growth - a line, a staircase of allocator arenas, a convex
    curve - has block medians that never fall (beyond ``STEADY_DIP`` of the rise),
    rise in most blocks, and keep their pace: the second half rises at least
    ``STEADY_KEEPS_PACE`` of what the first half did (a warm-up decelerates). These
    shapes fail the Mann-Kendall test corrected for autocorrelation (their residuals
    from a straight line are one long wave) and the noise band (the wave is the
    band), though a person sees the growth at once. At least ``STEADY_MIN_UPS``
    blocks must rise: one jump is a level shift, several with no fall a staircase.
    Under a driftless random walk or any stationary noise, block-to-block increments
    are as likely down as up, so
    ``k - 1`` increments none of which falls happen with probability ~2^-(k-1): that
    figure is returned, for the caller's false-alarm budget.
    """
    n = len(x)
    k = min(STEADY_BLOCKS_EXACT, n) if exact else min(STEADY_BLOCKS, n // 3)
    if k < STEADY_MIN_BLOCKS or float(x[-1] - x[0]) <= 0:
        return None
    edges = np.linspace(float(x[0]), float(x[-1]), k + 1)
    which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, k - 1)
    meds = [float(np.median(y[which == b])) for b in range(k) if np.any(which == b)]
    if len(meds) < STEADY_MIN_BLOCKS:
        return None
    m = np.asarray(meds)
    rise = float(m[-1] - m[0])
    if rise <= 0:
        return None
    d = np.diff(m)
    dip = STEADY_DIP * rise
    if np.any(d < -dip):
        return None
    ups = int(np.sum(d > dip))
    if ups < max(STEADY_MIN_UPS, STEADY_UP_FRACTION * len(d)):
        return None
    half = len(m) // 2
    first, second = float(m[half] - m[0]), float(m[-1] - m[half])
    if second < STEADY_KEEPS_PACE * first:
        return None
    # the same on a smooth fit: a quadratic through the block medians, its slope at the
    # end against its slope at the start (a warm-up's approach decelerates all along, so
    # it does so without its first block too; one steep first block before an even climb,
    # the tail of a warm-up the cut left in, does not)
    if _decelerates(m) and (not steep_start or _decelerates(m[1:])):
        return None
    return float(0.5 ** len(d))


def _decelerates(m: Array) -> bool:
    """A quadratic through block medians ``m`` ends at under ``STEADY_END_SLOPE`` of the
    slope it starts with (or falls at its end)."""
    c = np.arange(len(m), dtype=np.float64)
    q, b, _ = np.polyfit(c, m, 2)
    start, end = float(b), float(b + 2.0 * q * c[-1])
    return end <= 0 or end < STEADY_END_SLOPE * max(start, 0.0)


def sawtooth_flat(y: Array, saw: Sawtooth, total: float, per_x: float, x: Array) -> bool:
    """A sawtooth with too few periods to judge its floor's slope, but whose floors and
    peaks over at least two complete periods rise by less than what counts (``total`` in
    all and ``per_x`` per unit of x): it grows and clears, and the clearing wins."""
    cuts = [d + 1 for d in saw.drops]
    segments = [(a, b) for a, b in zip(cuts, cuts[1:]) if b - a >= 2]
    if len(segments) < 2:
        return False
    floors = [float(np.min(y[a:b])) for a, b in segments]
    peaks = [float(np.max(y[a:b])) for a, b in segments]
    span = float(x[segments[-1][0]] - x[segments[0][0]])
    rise = max(floors[-1] - floors[0], peaks[-1] - peaks[0])
    return rise < total and (span <= 0 or rise / span < per_x)
