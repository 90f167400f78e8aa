"""One series in, one verdict out: leak / no_leak / inconclusive, with its numbers.

``judge_series`` picks what is judged (a sawtooth's floor, the window after the warm-up,
its recent half); ``verdict.judge_window`` judges each window."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np

from memprobe.analysis.options import DEFAULT_OPTIONS, DetectOptions
from memprobe.analysis.series import Array, as_array, family_of, reduce_points
from memprobe.analysis.trend import (
    MIN_FLOOR_POINTS,
    let_go_at_end,
    sawtooth_flat,
    sawtooth_floor,
)
from memprobe.analysis.verdict import (
    INCONCLUSIVE,
    LEAK,
    NO_LEAK,
    STOP_SHARE,
    SignalVerdict,
    judge_window,
)
from memprobe.analysis.warmup import detect_warmup
from memprobe.analysis.wording import needed_text

OVERWHELMING = 20.0  # growth this many times what counts shortens the time axis' minimum span

# counts of things a program keeps, whose one drop may be the first tooth of a sawtooth
_TOOTH_COUNTS = ("objects:", "container:", "tensors:count")

__all__ = ["judge_series"]

# judge_window on a part of the judged window: (which points, the tests it shares the
# false-alarm budget with, whether a steady rise counts)
Judge = Callable[[Any, int, bool], SignalVerdict]


def judge_series(
    x: Sequence[float] | Array,
    y: Sequence[float] | Array,
    unit: str = "bytes",
    options: DetectOptions = DEFAULT_OPTIONS,
    *,
    axis: str = "step",
    t: Optional[Sequence[float] | Array] = None,
    family: Optional[str] = None,
    signal: str = "",
    n_tests: int = 1,
    ended: bool = False,
) -> SignalVerdict:
    """Judge one series (x sorted ascending; steps or seconds as ``axis`` says).

    ``t`` (seconds, same length) turns per-step rates into per-second ones.
    ``signal`` (the series' name) sets the family and thresholds; without it
    bytes are judged as process memory and counts as object counts.
    ``n_tests`` is how many signals the caller judges together: the run's
    false-alarm budget ``1 - options.confidence`` is split between them.
    ``ended``: the series reaches the process' end (not a run still going, where a drop in
    the last samples may be a clear that a refill follows).
    """
    xa, ya = as_array(x), as_array(y)
    ta = as_array(t) if t is not None and len(t) == len(xa) else None
    fam = family or (family_of(signal) if signal else _default_family(unit))
    keep = np.isfinite(xa) & np.isfinite(ya)
    xa, ya = xa[keep], ya[keep]
    ta = ta[keep] if ta is not None else None
    if ended and signal.startswith(_TOOTH_COUNTS):
        # what the program let go as it finished is judged without (trend.let_go_at_end)
        end = let_go_at_end(xa, ya)
        xa, ya = xa[:end], ya[:end]
        ta = ta[:end] if ta is not None else None
    n = len(xa)
    base: Dict[str, Any] = {"unit": unit, "axis": axis, "family": fam}
    word = "steps" if axis == "step" else "seconds"
    if n < options.min_points:
        return SignalVerdict(
            INCONCLUSIVE,
            reason=f"only {n} samples",
            n=n,
            needed=f"at least {options.min_points - n} more samples",
            **base,
        )
    min_span = options.min_span_steps if axis == "step" else options.min_span_seconds
    # Two looks (the window, and its recent half) share the false-alarm budget.
    alpha = (1.0 - options.confidence) / max(1, n_tests) / 2.0
    # a count of objects cleared once and filling again is a tooth until it climbs past
    # where it fell from (torch's StorageWeakRef between DataLoader batches)
    saw = sawtooth_floor(xa, ya, first_tooth=signal.startswith(_TOOTH_COUNTS))
    if saw is not None and saw.floor is None:
        level = float(np.median(ya))
        total = options.growth_threshold(unit, level, fam)
        per_x = options.rate_threshold(unit, axis, fam, signal)
        if sawtooth_flat(ya, saw, total, per_x, xa):
            return SignalVerdict(
                NO_LEAK,
                reason="a sawtooth whose floor and peaks stay flat",
                n=n,
                confidence=0.9,
                floor=True,
                last_value=float(ya[-1]),
                x_end=float(xa[-1]),
                **base,
            )
        # too few periods to judge the floor: flat by the ordinary test (a rise at start-up
        # cut as warm-up, dips after) is flat; anything else waits for more periods
        plain = _judge_plain(xa, ya, ta, options, alpha, base, signal, n_tests, ended)
        if plain.verdict == NO_LEAK:
            return replace(plain, floor=True)
        # too few periods yet: a window shorter than that could hold a single ramp
        periods = max(1, MIN_FLOOR_POINTS + 1 - (n // saw.period))
        more = periods * saw.period * float(xa[-1] - xa[0]) / max(1, n - 1)
        return replace(
            _too_short(base, n, None, 0, more, word),
            reason="a sawtooth with too few periods to judge its floor",
            floor=True,
        )
    if saw is not None and saw.floor is not None:
        # A grow-and-clear series is judged on its floor only, over the whole
        # run: any shorter window could hold a single ramp and look like a
        # leak. Floors start after the first full period: no warm-up cut (it
        # would pick a rising stretch of the beat between sampling and period).
        xf, yf = xa[saw.floor], ya[saw.floor]
        tf = ta[saw.floor] if ta is not None else None
        if float(xf[-1] - xf[0]) < min_span:
            return _too_short(base, len(xf), None, 0, min_span - float(xf[-1] - xf[0]), word)
        v = judge_window(xf, yf, tf, options, alpha, base, signal, n_tests, True)
        return replace(v, x_end=float(xa[-1]), last_value=float(ya[-1]))
    return _judge_plain(xa, ya, ta, options, alpha, base, signal, n_tests, ended)


def _judge_plain(
    xa: Array,
    ya: Array,
    ta: Optional[Array],
    options: DetectOptions,
    alpha: float,
    base: Dict[str, Any],
    signal: str,
    n_tests: int,
    ended: bool = False,
) -> SignalVerdict:
    """The series judged as a line after its warm-up (the whole window, then its recent
    half, then for a program without steps that ended, the window up to its last rise), not
    as a sawtooth."""
    axis, unit, fam = base["axis"], base["unit"], base["family"]
    word = "steps" if axis == "step" else "seconds"
    min_span = options.min_span_steps if axis == "step" else options.min_span_seconds
    xr, yr = reduce_points(xa, ya, options.max_points)
    k = detect_warmup(xr, yr, options.max_warmup_fraction)
    w_x = float(xr[k])
    window = xa >= w_x
    xw, yw = xa[window], ya[window]
    tw = ta[window] if ta is not None else None
    span = float(xw[-1] - xw[0]) if len(xw) else 0.0
    warm = w_x if k > 0 else None
    if axis == "time" and len(xw) >= options.min_points and span < min_span:
        # growth this large needs less time to be told from start-up wobble: a chain of
        # graphs eating hundreds of MB a second may run for only a second or two
        rise = float(np.median(yw[-3:]) - np.median(yw[:3]))
        if rise >= OVERWHELMING * options.growth_threshold(unit, float(np.median(yw)), fam):
            min_span = min_span * options.overwhelming_span_factor

    def judge(keep: Any, tests: int, steady: bool = True) -> SignalVerdict:
        """``judge_window`` on the points ``keep`` picks of the window (a slice, a mask)."""
        tk = tw[keep] if tw is not None else None
        return judge_window(
            xw[keep], yw[keep], tk, options, alpha, base, signal, tests, False, steady=steady
        )

    if len(xw) < options.min_points or span < min_span:
        more_pts = max(0, options.min_points - len(xw))
        brief = _too_short(base, len(xw), warm, more_pts, max(0.0, min_span - span), word)
        if fam != "memory" or len(xw) < options.min_points or span <= 0:
            return brief
        # too short to call, but memory that rose by what counts in it is never "no leak"
        # yet (run.run_verdict): an asyncio server's unsent frames, RSS +84 MiB in 16 s,
        # its first 6.5 s cut as warm-up, was NO LEAK on the object counts alone
        return replace(brief, substantial=judge(slice(None), n_tests).substantial)
    whole = replace(judge(slice(None), n_tests), warmup_end_x=warm)
    short = _seconds_short(tw, axis, fam, options) if whole.verdict == LEAK else 0.0
    if short > 0:
        # tens of fast steps in a second or two: memory that climbs there is mostly the
        # first batches filling caches and arenas (a vocabulary memoised in the first 50
        # steps: +4.7 MiB/step over 1 s, flat after), as on the time axis
        # ... but memory that grew by what counts is never "no leak" yet (run.run_verdict)
        return replace(
            _too_short(base, len(xw), warm, 0, short, "seconds"), substantial=whole.substantial
        )
    if whole.verdict == LEAK:
        return whole
    recent = _recent_half(xw, judge, options, n_tests, min_span)
    if recent is not None:
        return recent
    if ended and axis == "time" and whole.verdict == INCONCLUSIVE:
        end = _before_its_end(xw, yw, judge, options, base, n_tests, whole.slope, float(xa[0]))
        return end or whole
    return whole


def _recent_half(
    xw: Array, judge: Judge, options: DetectOptions, n_tests: int, min_span: float
) -> Optional[SignalVerdict]:
    """The recent half, when it is a leak: leaks that start late (the allocator's free
    space absorbed them first) show there."""
    half = len(xw) // 2
    if len(xw) - half < options.min_points or float(xw[-1] - xw[half]) < min_span:
        return None
    recent = judge(slice(half, None), n_tests * 2, False)
    if recent.verdict != LEAK:
        return None
    return replace(recent, warmup_end_x=float(xw[half]), reason=recent.reason + " lately")


def _before_its_end(
    xw: Array,
    yw: Array,
    judge: Judge,
    options: DetectOptions,
    base: Dict[str, Any],
    n_tests: int,
    slope: float,
    start: float,
) -> Optional[SignalVerdict]:
    """A program without steps that grew for all its run but its last seconds, flat while
    it finished (a batch job removing the files it wrote, 2.5 s of a 19 s run): a leak when
    the window up to its last rise is one. Only where that flat end is short beside the
    rise since the series began (under ``STOP_SHARE`` of it, the warm-up included: a
    concave climb loses its steep start to the warm-up cut); a longer one is a stop
    (verdict._stopped_for_long). None otherwise. ``slope``: the whole window's; ``start``:
    where the series begins."""
    unit, fam = base["unit"], base["family"]
    total = options.growth_threshold(unit, float(np.median(yw)), fam)
    flat = _flat_end(xw, yw, slope, total / 8.0, options.max_points)
    if flat <= 0 or flat >= STOP_SHARE * (float(xw[-1]) - start - flat):
        return None
    cut = xw <= xw[-1] - flat
    if int(cut.sum()) < options.min_points or float(xw[cut][-1] - xw[0]) < options.min_span_seconds:
        return None
    v = judge(cut, n_tests * 2, True)
    if v.verdict != LEAK:
        return None
    return replace(
        v,
        reason=f"{v.reason}, flat for its last {flat:.1f} s (the program's end)",
        x_end=float(xw[-1]),
        last_value=float(yw[-1]),
    )


def _flat_end(x: Array, y: Array, slope: float, floor: float, max_points: int) -> float:
    """How long the series has stayed at its final level up to its end: within what the
    window's ``slope`` adds in two of its (reduced) sample intervals, or ``floor``."""
    if slope <= 0 or len(x) < 2:
        return 0.0
    xr, yr = reduce_points(x, y, max_points)
    gap = float(np.median(np.diff(xr))) if len(xr) > 1 else 0.0
    eps = max(floor, 2.0 * slope * gap)
    start = len(xr) - 1
    for j in range(len(xr) - 2, -1, -1):
        if abs(float(yr[-1] - yr[j])) > eps:
            break
        start = j
    return float(x[-1] - xr[start])


def _seconds_short(tw: Optional[Array], axis: str, fam: str, options: DetectOptions) -> float:
    """How many seconds process memory judged on steps still lacks of
    ``min_span_seconds_backed`` of the clock: 0 when it spans that, or is something else
    (counts, heap blocks included, back a leak from the first steps)."""
    if axis != "step" or fam != "memory" or tw is None or len(tw) == 0:
        return 0.0
    return max(0.0, options.min_span_seconds_backed - float(tw[-1] - tw[0]))


def _too_short(
    base: Dict[str, Any], n: int, warm: Optional[float], points: int, span: float, word: str
) -> SignalVerdict:
    return SignalVerdict(
        INCONCLUSIVE,
        reason="too short after the warm-up" if warm is not None else "too short",
        n=n,
        warmup_end_x=warm,
        needed=needed_text(points, span, word),
        **base,
    )


def _default_family(unit: str) -> str:
    return "memory" if unit == "bytes" else "object"
