"""A whole run: every signal of every process judged, findings, one run verdict.

The run verdict keeps false alarms per RUN, not per signal, under
``1 - confidence``:

- the false-alarm budget is split over every signal judged (Bonferroni), and
  each signal's test is corrected for autocorrelation (trend.py) and must rise
  clear of its own noise band;
- Python-heap counts (``py_alloc_blocks``, ``gc_tracked_objects``,
  ``objects:*``, ``container:*:len``) wobble together with cyclic garbage and
  interpreter caches, and one small object per step may be negligible: a leak
  on one of them counts only when process memory, a heavy-object count or the
  heap blocks grow with it; alone it is reported as inconclusive;
- high-water marks (``max_*``) and CUDA reserved/inactive bytes never make a
  leak by themselves (reserved growing over flat allocated is fragmentation).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import AbstractSet, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from memprobe.analysis.findings import fragmentation_finding, leak_finding
from memprobe.analysis.options import DEFAULT_OPTIONS, DetectOptions
from memprobe.analysis.phases import merge_tail, stepless_tail
from memprobe.analysis.projection import project_oom
from memprobe.analysis.series import (
    BLOCKS,
    Prepared,
    family_of,
    prepare,
    step_clock,
    unit_of,
    with_steps,
)
from memprobe.analysis.verdict import INCONCLUSIVE, LEAK, NO_LEAK, SignalVerdict, judge_series
from memprobe.record import Finding, Process, RunRecord, Signals

# families whose leak verdict can make the run's verdict "leak"
COUNTED = ("memory", "object", "heap")
_NOT_TESTED = ("peak",)
_CUDA_RESERVED = re.compile(r"^cuda:(\d+)/reserved_bytes$")
# the order findings are listed in: what the person sees first
_FAMILY_ORDER = {"memory": 0, "object": 1, "heap": 2}


@dataclass(frozen=True)
class Analysis:
    """What ``analyze`` found: the findings, the run verdict, per-signal summaries.

    ``signals`` is ``{"<pid>": {"<signal>": SignalVerdict.summary()}}``, the
    record's ``RunRecord.signals``; ``headline`` is one line for a person.
    """

    findings: List[Finding]
    verdict: str
    signals: Signals
    headline: str = ""
    verdicts: Dict[Tuple[int, str], SignalVerdict] = field(default_factory=dict, repr=False)


def process_axis(process: Process) -> str:
    """Steps where the process has them, else time."""
    for s in process.series.values():
        if sum(1 for st in s.step if st is not None) >= 3:
            return "step"
    return "time"


def count_tests(record: RunRecord) -> int:
    return max(
        1,
        sum(1 for p in record.processes for name in p.series if family_of(name) not in _NOT_TESTED),
    )


def judge_process(
    process: Process, options: DetectOptions, n_tests: int, after_steps: bool = False
) -> Dict[str, SignalVerdict]:
    """Every signal of one process, judged on the process' x-axis.

    On the time axis (a program without steps) memory grows for seconds while it
    imports and builds its model: memory and heap signals need
    ``min_span_seconds`` there, unless something accumulates in the process (an
    object count grows, or the census saw a graph carried across steps): then
    ``min_span_seconds_backed`` is enough, as it always is for object counts.

    ``after_steps``: the process is the phase after a stepping process' last step (see
    phases.py): its model and imports were built long before, so a climbing tensor count
    is something accumulating there too.
    """
    axis = process_axis(process)
    clock = step_clock(process.series) if axis == "step" else None
    backed = replace(options, min_span_seconds=options.min_span_seconds_backed)
    prepared = {}
    for name, series in sorted(process.series.items()):
        if clock is not None and sum(1 for st in series.step if st is not None) < 3:
            series = with_steps(series, clock)
        prepared[name] = prepare(series, axis)

    def judge(name: str, opts: DetectOptions) -> SignalVerdict:
        prep = prepared[name]
        return judge_series(
            prep.x,
            prep.y,
            unit_of(name),
            opts,
            axis=axis,
            t=prep.t,
            signal=name,
            n_tests=n_tests,
        )

    out: Dict[str, SignalVerdict] = {}
    for name in prepared:
        out[name] = judge(name, backed if _counts_items(name) else options)
        if axis == "time" and out[name].verdict == INCONCLUSIVE and not _counts_items(name):
            # flat already: no leak when even over the full span its upper rate bound
            # could not add up to growth that matters (a short run that never grew)
            short = judge(name, backed)
            level = short.last_value if short.last_value is not None else 0.0
            limit = options.growth_threshold(short.unit, level, short.family)
            if short.verdict == NO_LEAK and short.ci_high * options.min_span_seconds < limit:
                out[name] = short
    # tensor storage that keeps climbing (a bank grown with torch.cat: the count stays)
    climb = tensor_bytes_rate(process.census, axis, options.min_growth_bytes)
    bounds = deque_bounds(process.census)
    if _accumulates(out, after_steps) or carried_in_census(process.census) or climb > 0:
        # something accumulates: memory that grows with it is less likely a random walk
        # (half the clearance over its noise band) and, without steps, needs the short
        # span only
        memory = replace(
            backed if axis == "time" else options,
            min_rise_over_band=options.min_rise_over_band / 2,
        )
        for name in prepared:
            if not _counts_items(name) and out[name].verdict == INCONCLUSIVE:
                out[name] = judge(name, memory)
    filling = any(length < maxlen for _, length, maxlen in bounds.values())
    if climb > 0 and not filling:
        out = _backed_by_tensor_bytes(out, climb, options)
        out = _even_tensor_climb(out, process.census, axis, options.min_growth_bytes)
    items, items_growth = items_bytes_rate(process.census, axis, prepared)
    # the items' bytes back the counts when they grow at a rate that counts and by an amount
    # that counts (what 50 kept predictions of 256 B add up to does not)
    heavy_items = (
        items >= options.rate_threshold("bytes", axis) and items_growth >= options.min_growth_bytes
    )
    if axis == "step" and not heavy_items:
        # the same on the clock: a list of tensors filled every tenth step of 1 ms steps
        # gains 150 B a step, 150 KiB a second (a bar's history of metric dicts); lists
        # of plain numbers are left out (a loss history of floats is no leak)
        per_s, grown_s = items_bytes_rate(process.census, "time", prepared, objects_only=True)
        heavy_items = per_s >= options.min_bytes_per_s and grown_s >= options.min_growth_bytes
    out = bounded_fill(out, bounds)
    out = corroborate(out, carried_in_census(process.census), heavy_items)
    out = steady_needs_backing(out)
    if axis == "step":
        # the phase after the last step (evaluation, rollouts): on seconds, see phases.py
        tail = stepless_tail(process, options.min_span_seconds_backed)
        if tail is not None:
            t_stop, after = tail
            tail_verdicts = judge_process(after, options, n_tests * 2, after_steps=True)
            out = merge_tail(out, tail_verdicts, t_stop, after, options)
    return out


# a memory leak by the steady-rise test alone (see verdict.SignalVerdict.steady) stands on its
# own over at least this long a window: shorter, a buffer being filled (a preallocated ring
# buffer touched page by page, a teacher's outputs computed once) rises just as steadily
STEADY_ALONE_STEPS = 1000.0
STEADY_ALONE_S = 30.0


def steady_needs_backing(verdicts: Dict[str, SignalVerdict]) -> Dict[str, SignalVerdict]:
    """Memory called a leak only because it rises steadily, over a short window (under
    30 s, or under 1,000 steps), with no other signal of the process leaking by the regular
    test or any count of heavy objects growing with it: not a leak yet (the growth still
    keeps the run from "no leak"). A Python-heap count backs it only when it leaks itself:
    heap blocks that rose while a bounded cache filled, then wobbled flat, rise "within
    their noise" over the window."""
    backed = any(
        (v.verdict == LEAK and not v.steady)
        or (v.family == "object" and v.growing)
        or (v.family == "heap" and v.verdict == LEAK)
        for v in verdicts.values()
    )
    if backed:
        return verdicts
    out = dict(verdicts)
    for name, v in verdicts.items():
        if not (v.verdict == LEAK and v.steady and v.family == "memory"):
            continue
        span = (v.x_end or 0.0) - (v.x0 or 0.0)
        # long enough to stand alone: 30 s, and on the step axis 1,000 steps too (an
        # allocator grows its arenas for seconds after a replay deque of fast steps is full)
        seconds = span / v.steps_per_s if v.axis == "step" and v.steps_per_s else span
        if seconds >= STEADY_ALONE_S and (v.axis != "step" or span >= STEADY_ALONE_STEPS):
            continue
        out[name] = replace(
            v,
            verdict=INCONCLUSIVE,
            substantial=True,
            reason=f"{v.reason}, but nothing else grows with it yet",
            needed="a longer rise, or another signal growing with it",
        )
    return out


def deque_bounds(census: Sequence[Mapping[str, Any]]) -> Dict[str, Tuple[str, int, int]]:
    """Item types the last census found inside a bounded deque (``deque(maxlen=N)``):
    type -> (holder, length, maxlen). Items of a replay buffer fill it, then each new one
    pushes the oldest out."""
    out: Dict[str, Tuple[str, int, int]] = {}
    for entry in census:
        boxes = entry.get("containers") if isinstance(entry, dict) else None
        for box in boxes if isinstance(boxes, list) else []:
            if not isinstance(box, dict):
                continue
            holder, length, bound = box.get("holder"), box.get("len"), box.get("maxlen")
            types = box.get("elem_types")
            if not (isinstance(holder, str) and isinstance(types, list)):
                continue
            if not (isinstance(length, int) and isinstance(bound, int) and bound > 0):
                continue
            for t in types:
                if isinstance(t, str):
                    out[t] = (holder, length, bound)
    return out


def bounded_fill(
    verdicts: Dict[str, SignalVerdict], bounds: Mapping[str, Tuple[str, int, int]]
) -> Dict[str, SignalVerdict]:
    """Counts explained by a bounded deque filling up: not a leak yet, and they back nothing.

    The live count of the deque's item type, when it grows by no more than the deque can
    take; and while the deque is still filling, the tensors and heap blocks those items
    bring along (a few per item: a transition's observations). Growth beyond that means the
    objects accumulate somewhere else too: the verdict stands.
    """
    out = dict(verdicts)
    filling = [b for b in bounds.values() if b[1] < b[2]]
    for name, v in verdicts.items():
        if not (v.verdict == LEAK or v.growing):
            continue
        if name.startswith("objects:"):
            bound = bounds.get(name[len("objects:") :])
            per_item = 1
        elif name in (TENSOR_COUNT, BLOCKS) and filling:
            bound = max(filling, key=lambda b: b[2])
            per_item = _ITEM_PARTS if name == TENSOR_COUNT else _ITEM_BLOCKS
        else:
            continue
        if bound is None or v.growth > per_item * (1.2 * bound[2] + 16):
            continue
        holder, length, maxlen = bound
        out[name] = replace(
            v,
            verdict=INCONCLUSIVE,
            growing=False,
            substantial=False,
            reason=f"{v.reason}, while `{holder}`, a deque(maxlen={maxlen}), fills "
            f"({length} of {maxlen} at the last census): bounded",
            needed="the deque to fill, then no more growth",
        )
    return out


# what one item of a bounded deque may bring along: tensors (a transition's state, next
# state, action, reward) and heap blocks (its tuple, numbers, small containers)
_ITEM_PARTS = 4
_ITEM_BLOCKS = 16


def items_bytes_rate(
    census: Sequence[Mapping[str, Any]],
    axis: str,
    lengths: Optional[Mapping[str, Prepared]] = None,
    objects_only: bool = False,
) -> Tuple[float, float]:
    """The fastest growth, in bytes per step (per second without steps), of what a watched
    container's items hold, as the agent measured them at each census, and the most any
    container's items grew in all: memory evidence of its own when the process' memory
    series are too short to say.

    With the container's dense length series (``lengths``: prepared series by name) the
    bytes an item holds at the last census, times the items gained since the first census
    that measured it, count too: censuses are seconds apart, its length is read at every
    cheap sample, so a slow leak of heavy items (a replay list of tensors never trimmed)
    counts as soon as its items add up, not at the next census. ``axis="time"`` on a
    process with steps gives bytes per second (the dense lengths' own clock), and
    ``objects_only`` leaves out containers of plain numbers (a loss history of floats)."""
    first: Dict[str, Tuple[float, float, float]] = {}
    per_item: Dict[str, float] = {}
    best = 0.0
    grown = 0.0
    for entry in census:
        if not isinstance(entry, dict):
            continue
        x = entry.get("step") if axis == "step" else entry.get("t")
        if not isinstance(x, (int, float)) or isinstance(x, bool):
            continue
        for box in entry.get("containers") or []:
            if not isinstance(box, dict) or not isinstance(box.get("holder"), str):
                continue
            if objects_only and box.get("scalar"):
                continue
            nbytes, length = box.get("bytes"), box.get("len")
            if not isinstance(nbytes, (int, float)) or isinstance(nbytes, bool):
                continue
            n = float(length) if isinstance(length, int) and not isinstance(length, bool) else 0.0
            if n > 0:
                per_item[box["holder"]] = float(nbytes) / n
            x0, b0, _ = first.setdefault(box["holder"], (float(x), float(nbytes), n))
            if x > x0:
                best = max(best, (float(nbytes) - b0) / (float(x) - x0))
                grown = max(grown, float(nbytes) - b0)
    for holder, (x0, _, n0) in first.items():
        prep = (lengths or {}).get(f"container:{holder}:len")
        each = per_item.get(holder)
        if prep is None or not each or len(prep.x) < 2 or n0 <= 0:
            continue
        xs = prep.t if axis == "time" and prep.axis == "step" else prep.x
        x_end, n_end = float(xs[-1]), float(prep.y[-1])
        if x_end > x0 and n_end > n0:
            gained = (n_end - n0) * each
            best = max(best, gained / (x_end - x0))
            grown = max(grown, gained)
    return best, grown


def _counts_items(name: str) -> bool:
    """Counts of things a program accumulates: heavy objects, watched containers and the
    objects the program watches itself (``memprobe.watch``)."""
    return family_of(name) == "object" or name.startswith(
        ("container:", "graph:held_by:", "watch:")
    )


# object counts that say something accumulates (a tensor count alone does not: a program
# builds its model's tensors at start-up, and a few small tensors a step weigh nothing)
_NOT_ACCUMULATION = ("tensors:count", "tensors:cpu_bytes")


def _accumulates(verdicts: Dict[str, SignalVerdict], after_steps: bool = False) -> bool:
    return any(
        _counts_items(name)
        and (after_steps or name not in _NOT_ACCUMULATION)
        and (v.verdict == LEAK or v.growing)
        for name, v in verdicts.items()
    )


def _backed_by_tensor_bytes(
    verdicts: Dict[str, SignalVerdict], climb: float, options: DetectOptions
) -> Dict[str, SignalVerdict]:
    """Process memory that rises significantly at a rate that counts, while the tensors'
    bytes climbed at every one of the last censuses at a comparable rate (a quarter of it
    or more), is a leak even when its allocator makes it too ragged to be clear of its own
    noise: two independent measurements agree."""
    out = dict(verdicts)
    for name, v in verdicts.items():
        if v.family != "memory" or v.verdict != INCONCLUSIVE or name.startswith("cuda:"):
            continue
        if not (v.ci_low > 0 and v.slope >= options.rate_threshold(v.unit, v.axis, v.family)):
            continue
        if climb < 0.25 * v.slope:
            continue
        out[name] = replace(
            v,
            verdict=LEAK,
            confidence=max(v.confidence, 0.9),
            substantial=True,
            growing=True,
            reason=f"{v.reason.split(' (')[0].replace('not clear of its noise', 'grows')} "
            "with the tensors' bytes climbing at every census",
            needed=None,
        )
    return out


def _even_tensor_climb(
    verdicts: Dict[str, SignalVerdict],
    census: Sequence[Mapping[str, Any]],
    axis: str,
    min_growth: float,
) -> Dict[str, SignalVerdict]:
    """Tensor bytes that climbed at every one of the last four censuses at an even pace
    (each rise within a factor of two of the others per step, though the censuses are
    spaced 5, 25, 100, 400 steps apart) by four times what counts: a leak on their own,
    however few the censuses. A filling cache slows down between far-apart censuses,
    a warm-up stops; linear growth over two orders of magnitude of steps does neither."""
    name = "tensors:cpu_bytes"
    v = verdicts.get(name)
    pts = _tensor_bytes(census, axis)
    if v is None or v.verdict != INCONCLUSIVE or len(pts) < 5:
        return verdicts
    last = pts[-5:]
    rates = _rising_rates(last)
    grown = last[-1][1] - last[0][1]
    if not rates or min(rates) < 0.5 * max(rates) or grown < 4 * min_growth:
        return verdicts
    rate = _overall_rate(last)
    per_s = _overall_rate(_tensor_bytes(census, "time")[-5:]) or None
    out = dict(verdicts)
    out[name] = replace(
        v,
        verdict=LEAK,
        slope=rate,
        slope_per_step=rate if axis == "step" else None,
        slope_per_s=per_s if axis == "step" else rate,
        ci_low=min(rates),
        ci_high=max(rates),
        confidence=0.95,
        growth=grown,
        growing=True,
        substantial=True,
        last_value=last[-1][1],
        x0=last[0][0],
        x_end=last[-1][0],
        intercept=last[0][1],
        reason=f"climbs at an even pace at each of the last {len(rates)} censuses",
        needed=None,
    )
    return out


def tensor_bytes_rate(census: Sequence[Mapping[str, Any]], axis: str, min_growth: float) -> float:
    """The tensors' bytes per step (per second without steps) from the first to the last
    census, when they climbed at each of the last three (``_climbs``); else 0."""
    pts = _tensor_bytes(census, axis)
    return _overall_rate(pts) if _climbs(pts, min_growth) else 0.0


def _overall_rate(pts: List[Tuple[float, float]]) -> float:
    """From the first point to the last, per unit of x; 0 without a span."""
    if len(pts) < 2 or pts[-1][0] <= pts[0][0]:
        return 0.0
    return (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])


def _rising_rates(pts: List[Tuple[float, float]]) -> List[float]:
    """The rate of each rise between consecutive points; [] unless every one rises."""
    if not all(b[1] > a[1] and b[0] > a[0] for a, b in zip(pts, pts[1:])):
        return []
    return [(b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(pts, pts[1:])]


def _x(entry: Any, key: str) -> Optional[float]:
    v = entry.get(key) if isinstance(entry, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _tensor_bytes(census: Sequence[Mapping[str, Any]], axis: str) -> List[Tuple[float, float]]:
    pts: List[Tuple[float, float]] = []
    for entry in census:
        tensors = entry.get("tensors") if isinstance(entry, dict) else None
        by_device = tensors.get("bytes_by_device") if isinstance(tensors, dict) else None
        x = _x(entry, "step" if axis == "step" else "t")
        if not isinstance(by_device, dict) or x is None:
            continue
        total = sum(
            float(b)
            for b in by_device.values()
            if isinstance(b, (int, float)) and not isinstance(b, bool)
        )
        pts.append((x, total))
    return pts


def _climbs(pts: List[Tuple[float, float]], min_growth: float) -> bool:
    """The tensors' bytes rose at each of the last three censuses, by at least
    ``min_growth`` and a tenth in all, and not slowing to a stop (the last rise at half the
    rate of the one before or more: a cache that fills slows down, a leak keeps its pace).
    Tensor storage accumulates even when the tensor count does not (a memory bank grown
    with ``torch.cat``, one tensor that gets longer). A few censuses cannot make a verdict
    of their own; they tell memory that rises with them from an allocator's random walk."""
    rates = _rising_rates(pts[-4:]) if len(pts) >= 4 else []
    if not rates:
        return False
    grown = pts[-1][1] - pts[0][1]
    return (
        rates[-1] >= 0.5 * rates[-2] and grown >= min_growth and grown >= 0.1 * max(pts[0][1], 1.0)
    )


def carried_in_census(census: Sequence[Mapping[str, Any]]) -> bool:
    """The agent saw an earlier census' graph still alive behind a named tensor."""
    for entry in census:
        graphs = entry.get("graphs") if isinstance(entry, dict) else None
        carried = graphs.get("carried") if isinstance(graphs, dict) else None
        if isinstance(carried, list) and carried:
            return True
    return False


def corroborate(
    verdicts: Dict[str, SignalVerdict], graphs_carried: bool = False, heavy_items: bool = False
) -> Dict[str, SignalVerdict]:
    """Heap-count leaks count only with backing from another signal.

    Backing is a leak or a significant growth above its practical rate (see
    ``SignalVerdict.growing``) of process memory, of heavy-object counts, or of
    ``py_alloc_blocks`` (whose rate threshold is in bytes' worth of blocks).
    A heap leak without it is reported as inconclusive.
    """
    out = dict(verdicts)
    tensors = verdicts.get(TENSOR_COUNT)
    if (
        tensors is not None
        and tensors.verdict == LEAK
        and not graphs_carried  # the census saw them hold a graph carried across steps
        and not heavy_items  # a watched container's items grow by bytes that count
        and not _heavy_tensors(verdicts)
    ):
        out[TENSOR_COUNT] = tensors = replace(
            tensors,
            verdict=INCONCLUSIVE,
            growing=False,  # backs nothing either
            reason=tensors.reason + ", but they hold no graph and no memory grows with them",
            needed="memory, an autograd graph or tensor bytes growing with it",
        )
    for name, v in verdicts.items():
        if v.verdict != LEAK or v.family != "heap":
            continue
        v_out = out
        if heavy_items and name.startswith("container:"):
            continue  # its items grow by bytes that count
        if any(_backs(name, other, ov) for other, ov in v_out.items() if other != name):
            continue
        out[name] = replace(
            v,
            verdict=INCONCLUSIVE,
            reason=v.reason + ", but nothing else grows with it",
            needed="another signal growing with it (RSS, Python heap blocks, a census series)",
        )
    return out


TENSOR_COUNT = "tensors:count"


def _heavy_tensors(verdicts: Dict[str, SignalVerdict]) -> bool:
    """A growing tensor count counts on its own when the tensors are heavy: memory grows
    with them, or what they hold (autograd graphs, tensor bytes) does."""
    for name, v in verdicts.items():
        if name == TENSOR_COUNT or not (v.verdict == LEAK or v.growing):
            continue
        if name.startswith(("graph:", "tensors:")):
            return True
        # process memory backs them when it leaks itself: memory merely rising within its
        # noise (an allocator's wobble beside 256 B tensors kept per batch) does not
        if v.family == "memory" and v.verdict == LEAK:
            return True
    return False


def _backs(name: str, other: str, v: SignalVerdict) -> bool:
    """Does ``other`` back a heap leak of ``name``? Memory, heavy objects or heap
    blocks growing do; so does any leak when ``name`` is the heap-blocks counter
    (the leak says what grows, the blocks say it is not nothing)."""
    if name == BLOCKS and v.verdict == LEAK and v.family in COUNTED:
        return True
    if not (v.verdict == LEAK or v.growing):
        return False
    if v.family == "memory":
        return v.verdict == LEAK  # memory within its own noise backs nothing
    return v.family == "object" or other == BLOCKS


def _deciding(
    verdicts: Mapping[Tuple[int, str], SignalVerdict], forked: AbstractSet[int] = frozenset()
) -> List[SignalVerdict]:
    """The verdicts the run's verdict rests on.

    A process' PSS is its USS plus its share of pages it shares with others, a share that
    moves whenever another process maps or drops the same libraries: with its USS judged no
    leak, its PSS holds nothing back. And USS/PSS (sampled from outside, twice a second)
    that are merely unclear hold nothing back where the process' own RSS, sampled at every
    step boundary, is judged no leak: RSS is USS plus shared pages, so private memory can
    only grow faster than RSS by turning shared pages private, which is bounded by what is
    shared. Except in processes forked from another (``forked``: DataLoader workers), where
    that copy-on-access is the leak to catch (pytorch/pytorch#13246)."""
    out: List[SignalVerdict] = []
    for (pid, name), v in verdicts.items():
        uss = verdicts.get((pid, "uss_bytes"))
        if name == "pss_bytes" and v.verdict != LEAK and uss is not None and uss.verdict == NO_LEAK:
            continue
        rss = verdicts.get((pid, "rss_bytes"))
        if (
            name in ("uss_bytes", "pss_bytes")
            and v.verdict == INCONCLUSIVE
            and pid not in forked
            and rss is not None
            and rss.verdict == NO_LEAK
            and rss.n >= 2 * v.n
        ):
            continue
        out.append(v)
    return out


def run_verdict(verdicts: List[SignalVerdict], min_points: int = 10) -> str:
    """leak if any counted signal leaks; no_leak once a memory signal (or most
    signals with enough samples to say anything) is judged no_leak; else inconclusive."""
    counted = [
        v
        for v in verdicts
        if v.family in COUNTED and (v.verdict != INCONCLUSIVE or v.n >= min_points)
    ]
    if any(v.verdict == LEAK for v in counted):
        return LEAK
    if any(v.family == "memory" and v.substantial and v.verdict != NO_LEAK for v in counted):
        return INCONCLUSIVE  # memory grows by what counts: never "no leak" yet
    if any(v.verdict == NO_LEAK and v.family == "memory" for v in counted):
        return NO_LEAK
    # no memory signal judged yet: "no leak" only when most signals with half the points a
    # verdict needs are judged (one settled count beside dense short series says nothing;
    # a census-only series with its 4 points does not hold the verdict back)
    judged = [v for v in counted if v.verdict != INCONCLUSIVE]
    seen = [v for v in verdicts if v.family in COUNTED and 2 * v.n >= min_points]
    if judged and 2 * len(judged) >= len(seen):
        return NO_LEAK
    return INCONCLUSIVE


def analyze(record: RunRecord, options: DetectOptions = DEFAULT_OPTIONS) -> Analysis:
    """Judge every signal of every process of a run and call the run."""
    n_tests = count_tests(record)
    findings: List[Finding] = []
    signals: Signals = {}
    all_verdicts: Dict[Tuple[int, str], SignalVerdict] = {}
    for proc in record.processes:
        verdicts = judge_process(proc, options, n_tests)
        signals[str(proc.pid)] = {name: v.summary() for name, v in verdicts.items()}
        all_verdicts.update({(proc.pid, name): v for name, v in verdicts.items()})
        findings.extend(_process_findings(proc, verdicts, record))
    forked = {p.pid for p in record.processes if p.role in ("worker", "child")}
    verdict = run_verdict(_deciding(all_verdicts, forked), options.min_points)
    findings.sort(key=_finding_order)
    return Analysis(
        findings=findings,
        verdict=verdict,
        signals=signals,
        headline=headline(verdict, findings),
        verdicts=all_verdicts,
    )


def _process_findings(
    proc: Process, verdicts: Dict[str, SignalVerdict], record: RunRecord
) -> List[Finding]:
    out: List[Finding] = []
    leaking = sorted(
        (n for n, v in verdicts.items() if v.verdict == LEAK and v.family in COUNTED),
        key=lambda n: (_FAMILY_ORDER.get(verdicts[n].family, 9), -verdicts[n].confidence),
    )
    ram_level = _ram_level(verdicts)
    for name in leaking:
        v = verdicts[name]
        related = [n for n in leaking if n != name]
        # structured counts explain a byte leak best: list them first
        related.sort(key=lambda n: 0 if verdicts[n].family == "object" else 1)
        proj = project_oom(name, v, record.limits, ram_level)
        out.append(leak_finding(proc.pid, name, v, proj, proc.role, related))
    for name, reserved in verdicts.items():
        m = _CUDA_RESERVED.match(name)
        allocated = verdicts.get(f"cuda:{m.group(1)}/allocated_bytes") if m else None
        if allocated is None or reserved.verdict != LEAK:
            continue
        if allocated.verdict != LEAK and allocated.slope < 0.1 * reserved.slope:
            out.append(fragmentation_finding(proc.pid, name, reserved, allocated))
    return out


def _ram_level(verdicts: Dict[str, SignalVerdict]) -> Optional[float]:
    for name in ("rss_bytes", "uss_bytes"):
        v = verdicts.get(name)
        if v is not None and v.last_value is not None:
            return v.last_value
    return None


def _finding_order(f: Finding) -> Tuple[int, int, float]:
    kind = 0 if f.kind == "leak" else 1
    fam = _FAMILY_ORDER.get(family_of(f.signal), 9)
    return (kind, fam, -f.confidence)


def headline(verdict: str, findings: List[Finding]) -> str:
    """One line for a person: the verdict, the first finding's rate and projection."""
    leaks = [f for f in findings if f.kind == "leak"]
    if verdict == LEAK and leaks:
        first = leaks[0]
        rest = f" (+{len(leaks) - 1} more signals)" if len(leaks) > 1 else ""
        return f"LEAK: {first.explanation}{rest}"
    if verdict == NO_LEAK:
        return "no leak: memory stays flat after the warm-up"
    return "inconclusive: not enough steps yet to tell"


__all__ = [
    "Analysis",
    "analyze",
    "corroborate",
    "count_tests",
    "headline",
    "judge_process",
    "process_axis",
    "run_verdict",
]
