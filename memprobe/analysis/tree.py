"""A process tree that keeps more and more processes alive, each one flat.

Every process is judged on its own series; a leak of processes is in none of them. A
DataLoader with ``persistent_workers=True`` made for every stage and kept by a cache keeps
its workers: the tree grows from 3 to 11 processes, each one's memory flat, the main
process' own climb unclear (wild_ac/leak_progressive_resize_loaders). Here the tree's
memory is the USS of every process alive at each of the main process' samples (the last
read of each at or before it: USS counts only a process' own pages, so no page is counted
twice), judged like any memory series, and only where processes accumulate: more alive at
the end, by ``MIN_MORE`` or more, than in the first quarter of the time since the first
one started (a pool starting up). Workers
forked again every epoch, a pool of fixed size, or one that copies its parent's pages come
and go or stay as many: not a leak of processes, whatever their memory does.
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from typing import Callable, Dict, List, Optional, Tuple

from memprobe.analysis.findings import leak_finding
from memprobe.analysis.judge import judge_series
from memprobe.analysis.options import DetectOptions
from memprobe.analysis.projection import project_oom
from memprobe.analysis.series import TREE_USS, prepare
from memprobe.analysis.verdict import LEAK, SignalVerdict
from memprobe.record import Finding, Process, RunRecord, Series, Signals

MIN_MORE = 2  # more processes alive at the end than early on (``_accumulate``)
SETTLE = 0.25  # of the time from the first process' start to the end: its start-up
END_SLACK_S = 1.0  # a process counts as alive this long after its last sample


def _span(p: Process) -> Tuple[float, float]:
    ts = [s.t for s in p.series.values() if s.t]
    return min(t[0] for t in ts), max(t[-1] for t in ts)


def main_process(record: RunRecord) -> Optional[Process]:
    return next((p for p in record.processes if p.role == "main"), None)


def tree_series(record: RunRecord, main: Process) -> Optional[Tuple[Series, List[int]]]:
    """(the tree's USS on the main process' sample times, live others at each) when
    processes accumulate; None otherwise."""
    if len(record.processes) < 3:
        return None
    grid = main.series.get("rss_bytes")
    reads = [
        (p, p.series["uss_bytes"], *_span(p))
        for p in record.processes
        if p.series.get("uss_bytes") is not None and p.series["uss_bytes"].t
    ]
    if grid is None or len(grid.t) < 10 or len(reads) < 3:
        return None
    values: List[float] = []
    alive: List[int] = []
    for t in grid.t:
        total, others = 0.0, 0
        for p, uss, t0, t1 in reads:
            if t < t0 or t > t1 + END_SLACK_S:
                continue
            k = bisect.bisect_right(uss.t, t) - 1
            total += uss.value[max(k, 0)]
            others += p.pid != main.pid
        values.append(total)
        alive.append(others)
    if not _accumulate(list(grid.t), alive):
        return None
    return Series(step=list(grid.step), t=list(grid.t), value=values), alive


def _accumulate(t: List[float], alive: List[int]) -> bool:
    """More processes alive at the end, by ``MIN_MORE``, than at any sample of the first
    ``SETTLE`` of the time since the first one started: a pool's workers start a few
    milliseconds apart, and a start method's helper process (spawn's resource tracker)
    comes with them; none of them is a process kept from an earlier stage."""
    first = next((i for i, n in enumerate(alive) if n > 0), None)
    if first is None or alive[-1] < max(alive):
        return False
    settled = t[first] + SETTLE * (t[-1] - t[first])
    early = max(n for ti, n in zip(t, alive) if t[first] <= ti <= settled)
    return alive[-1] - early >= MIN_MORE


def tree_verdict(
    record: RunRecord, main: Process, axis: str, options: DetectOptions, n_tests: int
) -> Optional[Tuple[SignalVerdict, List[int]]]:
    """The tree's memory judged on the main process' axis, where processes accumulate.
    The processes accumulating are the evidence that something is kept, as a growing count
    is for memory beside it (run.judge_process); here the memory need not rise clear of a
    noise band at all, for each stage's workers come as one step of a staircase (its
    residuals are the steps): it must grow, significantly and above the floor."""
    found = tree_series(record, main)
    if found is None:
        return None
    series, alive = found
    prep = prepare(series, axis)
    v = judge_series(
        prep.x,
        prep.y,
        "bytes",
        replace(options, min_rise_over_band=0.0),
        axis=prep.axis,
        t=prep.t,
        signal=TREE_USS,
        n_tests=n_tests,
        ended=main.ended is not None,
    )
    return v, alive


def add_tree(
    record: RunRecord,
    axis_of: Callable[[Process], str],
    options: DetectOptions,
    n_tests: int,
    verdicts: Dict[Tuple[int, str], SignalVerdict],
    signals: Signals,
) -> List[Finding]:
    """The tree's verdict, judged on the main process' axis (``axis_of`` it), added to the
    run's ``verdicts`` and ``signals`` (as the main process' ``tree:uss_bytes``), and its
    finding when it leaks."""
    main = main_process(record)
    found = tree_verdict(record, main, axis_of(main), options, n_tests) if main else None
    if main is None or found is None:
        return []
    v, alive = found
    verdicts[(main.pid, TREE_USS)] = v
    signals.setdefault(str(main.pid), {})[TREE_USS] = v.summary()
    if v.verdict != LEAK:
        return []
    first = min(n for n in alive if n > 0)
    finding = leak_finding(main.pid, TREE_USS, v, project_oom(TREE_USS, v, record.limits))
    more = (
        f" {alive[-1]} processes beside the main one are alive at the end, {first} when the "
        "first one started: processes are started and never ended, each keeping its memory."
    )
    return [replace(finding, explanation=finding.explanation + more)]
