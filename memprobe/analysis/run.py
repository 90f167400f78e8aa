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
from typing import AbstractSet, Dict, List, Mapping, Optional, Tuple

from memprobe.analysis.census_growth import (
    backed_by_tensor_bytes,
    bounded_fill,
    carried_in_census,
    deque_bounds,
    even_tensor_climb,
    items_bytes_rate,
    tensor_bytes_rate,
)
from memprobe.analysis.evidence import (
    COUNTED,
    accumulates,
    corroborate,
    counts_items,
    instances_accumulate,
    slow_container_with_memory,
    steady_needs_backing,
)
from memprobe.analysis.fills import closed_figures_hold_back, deque_fills, fill_holds_back, let_go
from memprobe.analysis.findings import fragmentation_finding, leak_finding
from memprobe.analysis.judge import judge_series
from memprobe.analysis.native import grown_handle, handle_backs
from memprobe.analysis.options import DEFAULT_OPTIONS, DetectOptions
from memprobe.analysis.phases import merge_tail, program_clock, stepless_tail, without_teardown
from memprobe.analysis.projection import project_oom
from memprobe.analysis.series import family_of, prepare, step_clock, with_steps
from memprobe.analysis.tree import add_tree
from memprobe.analysis.verdict import INCONCLUSIVE, LEAK, NO_LEAK, SignalVerdict
from memprobe.analysis.wording import unit_of
from memprobe.record import Finding, Process, RunRecord, Signals

_NOT_TESTED = ("peak",)
# a graph seen outliving this many censuses in a row backs a steady memory rise: three looks
# at one growing chain (a truncated BPTT window detached every k steps outlives one census)
CARRIED_BACKS = 2
CARRIED_CLOCK = 0.5
_CUDA_RESERVED = re.compile(r"^cuda:(\d+)/reserved_bytes$")
# the order findings are listed in: what the person sees first
_FAMILY_ORDER = {"memory": 0, "object": 1, "heap": 2}


@dataclass(frozen=True)
class Analysis:
    """What ``analyze`` found: the findings, the run verdict, per-signal summaries
    (``signals``: the record's ``RunRecord.signals``); ``headline``: one line for a person."""

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
    is something accumulating there too. Seconds are the program's own (program_clock)."""
    axis = process_axis(process)
    process = without_teardown(process)
    process = program_clock(process) if axis == "time" else process  # censuses' pauses out
    clock = step_clock(process.series) if axis == "step" else None
    options, backed = options.on_seconds(axis == "time" and not after_steps, bool(process.ended))
    prepared = {}
    for name, series in sorted(process.series.items()):
        if clock is not None and sum(1 for st in series.step if st is not None) < 3:
            series = with_steps(series, clock)
        prepared[name] = prepare(series, axis)

    def judge(name: str, opts: DetectOptions, x_from: Optional[float] = None) -> SignalVerdict:
        prep = prepared[name]
        keep = prep.x >= x_from if x_from is not None else slice(None)
        return judge_series(
            prep.x[keep],
            prep.y[keep],
            unit_of(name),
            opts,
            axis=axis,
            t=prep.t[keep],
            signal=name,
            n_tests=n_tests,
            ended=process.ended is not None,
        )

    def backed_if_counts(name: str) -> DetectOptions:
        return backed if counts_items(name) else options

    out: Dict[str, SignalVerdict] = {}
    for name in prepared:
        out[name] = judge(name, backed_if_counts(name))
        if axis == "time" and out[name].verdict == INCONCLUSIVE and not counts_items(name):
            # flat already: no leak when even over the full span its upper rate bound
            # could not add up to growth that matters (a short run that never grew)
            short = judge(name, backed)
            level = short.last_value if short.last_value is not None else 0.0
            limit = options.growth_threshold(short.unit, level, short.family)
            if short.verdict == NO_LEAK and short.ci_high * options.min_span_seconds < limit:
                out[name] = short
    # tensor storage that keeps climbing (a bank grown with torch.cat: the count stays)
    spans = [(float(p.x[0]), float(p.x[-1])) for p in prepared.values() if len(p.x)]
    climb = tensor_bytes_rate(process.census, axis, options.min_growth_bytes, spans)
    bounds = deque_bounds(process.census)
    carried = carried_in_census(process.census)
    kept = carried_in_census(process.census, min_kept=CARRIED_BACKS)
    ended_stepless = axis == "time" and process.ended is not None  # its climb: no start-up
    grew = ended_stepless and instances_accumulate(
        prepared, lambda n: len(prepared[n].x), lambda n: judge(n, backed)
    )
    if accumulates(out, after_steps or ended_stepless) or carried or climb > 0 or grew:
        # something accumulates: memory growing with it is less likely a random walk (half
        # the clearance over its noise band) and, without steps, needs the short span only.
        # A graph that outlived censuses in a row across optimizer steps: memory climbing
        # after the warm-up is that chain, not the first batches filling caches, so it needs
        # half the short clock (1,500 steps of 3 ms: the allocator's free space absorbs the
        # chain's first 800, leaving under two seconds of rise)
        share = CARRIED_CLOCK if axis == "step" and kept else 1.0
        memory = replace(
            backed if axis == "time" else options,
            min_rise_over_band=options.min_rise_over_band / 2,
            min_span_seconds_backed=options.min_span_seconds_backed * share,
        )
        for name in prepared:
            if not counts_items(name) and out[name].verdict == INCONCLUSIVE:
                out[name] = judge(name, memory)
    # a container's length at the rate that counts for objects (see the function)
    exact = replace(options, min_heap_count_per_step=options.min_count_per_step)
    deques = {holder for holder, _, _ in bounds.values()}
    out = slow_container_with_memory(out, lambda name: judge(name, exact), deques)
    filling = any(length < maxlen for _, length, maxlen in bounds.values())
    if climb > 0 and not filling:
        out = backed_by_tensor_bytes(out, climb, options)
        out = even_tensor_climb(out, process.census, axis, options.min_growth_bytes)
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
    ends = {name: float(p.t[-1]) for name, p in prepared.items() if len(p.t)}
    out = let_go(out, process.census, ends)
    out = corroborate(out, carried, heavy_items)
    handle = grown_handle(process.census)
    out = steady_needs_backing(out, kept, handle is not None and handle.backs)
    out = handle_backs(out, handle)
    fills = deque_fills(process.census, axis)
    out = fill_holds_back(out, fills, lambda n, x: judge(n, backed_if_counts(n), x), process.census)
    out = closed_figures_hold_back(out)
    if axis == "step":
        # the phase after the last step (evaluation, rollouts): on seconds, see phases.py
        tail = stepless_tail(process, options.min_span_seconds_backed)
        if tail is not None:
            t_stop, after = tail
            tail_verdicts = judge_process(after, options, n_tests * 2, after_steps=True)
            out = merge_tail(out, tail_verdicts, t_stop, after, options)
    return out


USS_SETTLES_RSS_POINTS = 10  # twice this many USS points for its no-leak to settle unclear RSS


def _uss_settles(uss: Optional[SignalVerdict], rss: SignalVerdict) -> bool:
    """USS judged no leak on enough points, on RSS's axis, up to RSS's last quarter."""
    if uss is None or uss.verdict != NO_LEAK or uss.n < 2 * USS_SETTLES_RSS_POINTS:
        return False
    last, end, start = uss.x_end, rss.x_end, rss.x0
    if uss.axis != rss.axis or last is None or end is None or start is None:
        return False
    return last >= end - 0.25 * (end - start)


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
    that copy-on-access is the leak to catch (pytorch/pytorch#13246). The other way round,
    RSS that is merely unclear holds nothing back where the USS, judged on twice the points
    a verdict needs and reaching into the last quarter of RSS's window, is no leak: what
    RSS has beyond USS are pages other processes map too (libraries, a parent's pages in its
    forked children), and pages only this process maps, file-backed or not, count in its
    USS. (USS is read from outside, one read in 8 s after a lone process' first 20 s: the
    quarter keeps a USS that stopped early from speaking for RSS's end.)"""
    out: List[SignalVerdict] = []
    for (pid, name), v in verdicts.items():
        uss = verdicts.get((pid, "uss_bytes"))
        if name == "pss_bytes" and v.verdict != LEAK and uss is not None and uss.verdict == NO_LEAK:
            continue
        if name == "rss_bytes" and v.verdict == INCONCLUSIVE and _uss_settles(uss, v):
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
    forked = {p.pid for p in record.processes if p.role in ("worker", "child")}
    fork_parents = {p.parent_pid for p in record.processes if p.pid in forked}
    for proc in record.processes:
        verdicts = judge_process(proc, options, n_tests)
        if proc.pid in fork_parents:
            verdicts = shared_turned_private(verdicts)
        signals[str(proc.pid)] = {name: v.summary() for name, v in verdicts.items()}
        all_verdicts.update({(proc.pid, name): v for name, v in verdicts.items()})
        findings.extend(_process_findings(proc, verdicts, record))
    findings += add_tree(record, process_axis, options, n_tests, all_verdicts, signals)
    verdict = run_verdict(_deciding(all_verdicts, forked), options.min_points)
    findings.sort(key=_finding_order)
    return Analysis(
        findings=findings,
        verdict=verdict,
        signals=signals,
        headline=headline(verdict, findings),
        verdicts=all_verdicts,
    )


def shared_turned_private(verdicts: Dict[str, SignalVerdict]) -> Dict[str, SignalVerdict]:
    """USS/PSS of a process whose forked children the run saw, where its RSS is judged
    no leak: what grows there is pages it shares with them turning private to it as the
    children copy them (a DataLoader worker touching the parent's dataset makes its own copy
    of the page, and the parent's stays behind, now its alone). RSS counts shared and private
    pages alike, so new memory of its own would show there; the copies are the workers'
    finding (pytorch/pytorch#13246), not the parent's. Reported as inconclusive."""
    rss = verdicts.get("rss_bytes")
    if rss is None or rss.verdict != NO_LEAK:
        return verdicts
    out = dict(verdicts)
    for name in ("uss_bytes", "pss_bytes"):
        v = verdicts.get(name)
        if v is not None and v.verdict == LEAK:
            out[name] = v.held_back(
                "with RSS flat: pages shared with its forked children turning private to it "
                "as they copy them",
                None,
            )
    return out


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
    "shared_turned_private",
]
