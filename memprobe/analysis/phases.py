"""The phase after a process' last step: judged on seconds, not steps.

A program that trains with an optimizer and then stops stepping (an evaluation or
test-time phase, Monte-Carlo rollouts, an export loop) goes on sampling on time, with no
step to put the samples on: on the step axis the whole phase collapses onto the last step,
and a leak that lives only there (outputs kept with their graphs during validation, a memo
that never hits) would be invisible. The real post-mortems behind this project include one
that died in its evaluation phase.

So the samples taken after the steps stopped are cut out as a process of their own, without
steps, and judged as a program without steps is: on seconds, with the same thresholds. A
leak found there replaces the step-axis verdict of that signal; growth that counts but is
not yet clear keeps the run from being called "no leak".
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Dict, List, Optional, Tuple

from memprobe.analysis.options import DetectOptions
from memprobe.analysis.series import step_clock
from memprobe.analysis.verdict import INCONCLUSIVE, LEAK, NO_LEAK, SignalVerdict
from memprobe.analysis.wording import fmt_bytes
from memprobe.record import CensusEntry, Process, Series

# the agent samples on time again once no step came for a second (core.Agent.stall_s)
GAP_S = 1.0
MIN_POINTS = 10  # memory samples in the phase before it is judged at all
# A program that ends frees what its main function held as that function returns, and the
# agent samples on until the interpreter shuts down: a chain of 80,000 tensors behind an
# RNN's hidden state takes 0.2 s to take apart, and four samples in it fall from 79,000
# to 15,000 (a leak judged "not clear of its noise"). A fall that starts this close to the
# process' last sample and only falls is its end, not its run (DESIGN: the last point of
# each series is a real step).
TEARDOWN_S = 1.0


def stepless_tail(process: Process, min_span_s: float) -> Optional[Tuple[float, Process]]:
    """(when the steps stopped, the samples and censuses taken after) or None, when the
    process never stepped or its last phase without steps is shorter than ``min_span_s``."""
    t_stop = _last_step_t(process)
    if t_stop is None:
        return None
    start = t_stop + GAP_S
    series: Dict[str, Series] = {}
    for name, s in process.series.items():
        idx = [i for i, t in enumerate(s.t) if t > start and i < len(s.value)]
        if idx:
            series[name] = Series(
                step=[None] * len(idx),
                t=[s.t[i] for i in idx],
                value=[s.value[i] for i in idx],
            )
    memory = series.get("rss_bytes") or series.get("uss_bytes")
    if memory is None or len(memory.t) < MIN_POINTS:
        return None
    if memory.t[-1] - memory.t[0] < min_span_s:
        return None
    census = [c for c in process.census if isinstance(c, dict) and _t(c) > t_stop]
    return t_stop, replace(process, series=series, census=census)


def program_clock(process: Process) -> Process:
    """The process with its times on the program's own clock: the seconds its censuses
    held it stopped taken out of every later time (a sample read during a census from
    outside, the parent's USS, lands at the census' start).

    On the time axis a census is a pause in the curve: a program adding 860 objects a
    second adds 50 in the 0.28 s of a census, then climbs on from there. On the wall clock
    the line steps sideways at every census, and the warm-up search cuts the run at the
    step (``wild_j/leak_finalize_bound_method``: its 3 s serving phase cut to its last 1.6 s,
    too short to judge); on the program's clock it is the line it was."""
    pauses = sorted(
        (_t(c), float(c["duration_s"]))
        for c in process.census
        if isinstance(c, dict)
        and isinstance(c.get("duration_s"), (int, float))
        and c["duration_s"] > 0
        and _t(c) > float("-inf")
    )
    if not pauses:
        return process

    def shift(t: float) -> float:
        return t - sum(min(d, t - start) for start, d in pauses if start < t)

    series = {name: replace(s, t=[shift(t) for t in s.t]) for name, s in process.series.items()}
    census: List[CensusEntry] = []
    for c in process.census:
        moved = c.copy() if isinstance(c, dict) else c
        if isinstance(moved, dict) and "t" in moved:
            moved["t"] = shift(_t(c))
        census.append(moved)
    return replace(process, series=series, census=census)


def census_after_steps(process: Process) -> Optional[List[CensusEntry]]:
    """The censuses taken after the process' last step (at least two), else None."""
    t_stop = _last_step_t(process)
    if t_stop is None:
        return None
    census = [c for c in process.census if isinstance(c, dict) and _t(c) > t_stop]
    return census if len(census) >= 2 else None


def without_teardown(process: Process) -> Process:
    """An ended process without the fall its teardown left at the end of its series (see
    TEARDOWN_S); a process still running, or whose series end at their highest, as it is."""
    ends = [s.t[-1] for s in process.series.values() if s.t]
    if process.ended is None or not ends:
        return process
    end = max(ends)
    return replace(process, series={name: _cut_fall(s, end) for name, s in process.series.items()})


def _cut_fall(series: Series, end: float) -> Series:
    """The series up to its last highest point when every point after it falls, within
    TEARDOWN_S of ``end``, by at least half of what it had risen from its first."""
    v, n = series.value, min(len(series.t), len(series.value))
    if n < 3 or not all(math.isfinite(x) for x in v[:n]):
        return series
    top = max(range(n), key=lambda i: (v[i], i))
    after = v[top:n]
    fall, rise = v[top] - v[n - 1], v[top] - v[0]
    falls = all(b <= a for a, b in zip(after, after[1:]))
    if rise <= 0 or top == n - 1 or series.t[top] < end - TEARDOWN_S or not falls:
        return series
    if fall < rise / 2:
        return series
    return Series(step=series.step[: top + 1], t=series.t[: top + 1], value=v[: top + 1])


def _last_step_t(process: Process) -> Optional[float]:
    """When the process last sampled at a step: from the agent's own step-aligned RSS where
    there is one (samples taken from outside may carry a step they were stamped with)."""
    own = process.series.get("rss_bytes")
    if own is not None:
        stepped = [t for t, st in zip(own.t, own.step) if st is not None]
        if len(stepped) >= 3:
            return float(max(stepped))
    clock = step_clock(process.series)
    return float(clock[0][-1]) if clock is not None else None


def _t(entry: object) -> float:
    t = entry.get("t") if isinstance(entry, dict) else None
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else float("-inf")


def merge_tail(
    verdicts: Dict[str, SignalVerdict],
    tail: Dict[str, SignalVerdict],
    t_stop: float,
    after: Process,
    options: DetectOptions,
) -> Dict[str, SignalVerdict]:
    """The step-axis verdicts, with a signal's verdict on the phase after the steps where
    that phase leaks, where the steps had too few points of it to judge, or where memory
    rises there by what counts while the steps said no leak (a phase too short to judge
    still keeps the run from "no leak")."""
    out = dict(verdicts)
    when = f"after the last step (no steps since {t_stop:.1f} s)"
    for name, v in tail.items():
        before = verdicts.get(name)
        if v.verdict == LEAK and (before is None or before.verdict != LEAK):
            out[name] = replace(v, reason=f"{v.reason} {when}")
            continue
        if before is None or (
            before.verdict == INCONCLUSIVE and before.n < options.min_points and v.n > before.n
        ):
            # a series of that phase alone (a list of observers filled only while evaluating,
            # no point on a step): its verdict is that phase's, as the culprit reads it
            out[name] = replace(v, reason=f"{v.reason} {when}")
            continue
        if v.verdict != INCONCLUSIVE or (before is not None and before.verdict != NO_LEAK):
            continue
        if v.substantial:
            out[name] = replace(v, reason=f"{v.reason} {when}")
            continue
        rise = _rise(after.series.get(name))
        if v.family == "memory" and rise is not None:
            grown, level, span = rise
            if grown >= options.growth_threshold(v.unit, level, v.family):
                out[name] = replace(
                    v,
                    substantial=True,
                    reason=f"rises by {fmt_bytes(grown)} in {span:.1f} s {when}",
                )
    return out


def _rise(series: Optional[Series]) -> Optional[Tuple[float, float, float]]:
    """(rise from the first to the last samples, the level, the span in seconds)."""
    if series is None or len(series.value) < 6:
        return None
    head, tail = sorted(series.value[:3]), sorted(series.value[-3:])
    return tail[1] - head[1], tail[1], series.t[-1] - series.t[0]


__all__ = [
    "GAP_S",
    "census_after_steps",
    "merge_tail",
    "program_clock",
    "stepless_tail",
    "without_teardown",
]
