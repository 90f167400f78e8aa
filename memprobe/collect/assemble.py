"""The run record from a run's state: processes in role order with their series and
censuses (within the record's size quotas), short-lived children summarised in one event.

The launcher builds it once at the end, the live judge every few seconds, ``rebuild`` from a
run folder."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple, cast

from memprobe import __version__
from memprobe.bootstrap.memprobe_agent import wire
from memprobe.collect.censusbuf import CENSUS_HEAD, MAX_CENSUS
from memprobe.collect.managed import name_shared
from memprobe.collect.process import ProcState, all_series
from memprobe.collect.roles import Who, identify, order
from memprobe.collect.state import RunState
from memprobe.record import CensusEntry, Event, ExitInfo, Process, RunRecord

RECORD_POINTS = 150_000  # points of all series of a record together (run.json ~ 4 MB)
MIN_SERIES_POINTS = 256  # ... but never fewer than this per series
RECORD_CENSUS = 512  # full censuses written per record, all processes together
SHORT_LIVED_S = 1.0  # children that lived less than this (or barely sampled) are left out


def build_record(
    state: RunState, exit: ExitInfo, duration_s: float, compact: bool = True
) -> RunRecord:
    """The run record so far. ``compact=False`` (the live judge, every few seconds) keeps
    times and values as held, skipping a pass over every point for a smaller file."""
    who = identify(state)
    procs = state.procs
    ordered = sorted(procs, key=lambda q: order(who[q], procs[q].worker_id, q))
    kept = [pid for pid in ordered if not short_lived(procs[pid], who[pid])]
    points, censuses = _quotas(state.max_points, [procs[pid] for pid in kept])
    processes = [_process(procs[pid], who[pid], points, censuses, compact) for pid in kept]
    processes = name_shared(processes)  # a manager's objects by their proxies' holders
    keep = set(kept)
    left_out = [who[pid] for pid in ordered if pid not in keep]
    events = list(state.events) + _summary_events(left_out, state.garbage_lines, duration_s)
    return RunRecord(
        command=list(state.command),
        cwd=state.cwd,
        started_at=state.started_at,
        duration_s=duration_s,
        exit=exit,
        limits=state.limits,
        x_axis=x_axis(state),
        processes=processes,
        events=sorted(events, key=lambda e: e.t),
        memprobe_version=__version__,
        marks=sorted(state.marks, key=lambda m: m.t),
    )


def x_axis(state: RunState) -> str:
    return "step" if any(p.steps >= 5 for p in state.procs.values()) else "time"


def short_lived(p: ProcState, who: Who) -> bool:
    """Too short or too thinly sampled to judge (a 50 ms pool task); main and ranks stay."""
    if who.role in (wire.ROLE_MAIN, wire.ROLE_RANK):
        return False
    series = all_series(p).values()
    n = max((len(s) for s in series), default=0)
    ts = [pt[1] for s in series for pt in (s.first, s.last) if pt is not None]
    lifetime = max(ts) - min(ts) if ts else 0.0
    return n < 3 or lifetime < SHORT_LIVED_S


def _quotas(
    max_points: Optional[int], procs: List[ProcState]
) -> Tuple[Optional[int], Optional[int]]:
    """(points per series, full censuses per process) for a record of ``procs``: the
    record stays a few MB whatever the run's length and number of processes."""
    if max_points is None:
        return None, None
    n_series = sum(len(all_series(p)) for p in procs)
    points = max(MIN_SERIES_POINTS, min(max_points, RECORD_POINTS // max(1, n_series)))
    n_census = sum(1 for p in procs if p.census.full)
    censuses = max(CENSUS_HEAD + 2, min(MAX_CENSUS, RECORD_CENSUS // max(1, n_census)))
    return points, censuses


def _process(
    p: ProcState, w: Who, points: Optional[int], censuses: Optional[int], compact: bool
) -> Process:
    h = p.header
    return Process(
        pid=p.pid,
        parent_pid=p.ppid,
        role=w.role,
        rank=w.rank,
        worker_id=p.worker_id,
        argv=[str(a) for a in h.get("argv") or []] if p.has_agent else list(p.program or []),
        python=h.get("python") if isinstance(h.get("python"), str) else None,
        started_at=h.get("wall_t0") if isinstance(h.get("wall_t0"), float) else None,
        ended="exit" if p.exited else ("vanished" if p.has_agent else None),
        has_agent=p.has_agent,
        steps=p.steps,
        series={name: buf.series(points, compact) for name, buf in all_series(p).items()},
        # the agent's census lines, as written: readers check each field
        census=[cast(CensusEntry, c) for c in p.census.entries(censuses)],
        local_rank=w.local_rank,
        node=w.node,
        name=w.name,
    )


def _summary_events(left_out: List[Who], garbage_lines: int, duration_s: float) -> List[Event]:
    """What the record does not hold, said at its end: short-lived processes by kind, and
    unreadable lines."""
    events: List[Event] = []
    omitted: Dict[str, int] = {}
    for w in left_out:
        key = re.sub(r"-\d+$", "", w.name) if w.name else w.role  # ForkPoolWorker-7
        omitted[key] = omitted.get(key, 0) + 1
    if omitted:
        counts = sorted(omitted.items(), key=lambda kv: -kv[1])
        what = ", ".join(f"{n} × {k}" for k, n in counts)
        events.append(
            Event(
                t=duration_s,
                pid=None,
                kind="short_lived",
                message=f"{sum(omitted.values())} short-lived process(es) "
                f"(< {SHORT_LIVED_S:g} s or < 3 samples) left out of the record: "
                f"{what}",
            )
        )
    if garbage_lines:
        events.append(
            Event(
                t=duration_s,
                pid=None,
                kind="garbage_lines",
                message=f"{garbage_lines} unreadable line(s) skipped",
            )
        )
    return events
