"""Several nodes' run records shown as one: ``memprobe report a.json b.json ...``.

On a multi-node job each node runs its own ``memprobe run -- torchrun ...`` and
writes its own record. ``merge_records`` puts them side by side in one record:
every process keeps its series, its role and its global rank, and gains the node
it ran on, so labels read "node 1 rank 3". Pure: records in, record out.

The merged record carries no analysis (no findings, no per-signal summaries,
verdict "inconclusive"): judge it again (``finalize``) so that findings name the
merged processes and the run verdict covers every node.
"""

from __future__ import annotations

import dataclasses
from typing import List, Optional, Sequence, Set

from memprobe.record import (
    Event,
    ExitInfo,
    Limits,
    Mark,
    Process,
    RecordError,
    RunRecord,
    Series,
)

# Linux pids stay below 2**22 (pid_max's ceiling): an offset of k * 2**22 can never make a
# pid of one node look like a real pid of another.
PID_STRIDE = 1 << 22


def merge_records(records: Sequence[RunRecord]) -> RunRecord:
    """One record holding every process of ``records`` (one record per node).

    - node: the torchrun node rank (GROUP_RANK) the record's processes report when
      the job spanned several nodes, else the record's position in ``records``;
    - time: every series and event on the clock of the earliest record;
    - pids: kept, unless they collide with another record's (containers on several
      nodes often number processes alike): then that whole record's pids, parent
      pids and event pids are shifted by a multiple of ``PID_STRIDE``, and an event
      says so;
    - exit: the first record that failed; limits: the smallest RAM limit;
    - findings, signals, verdict: left empty for a new analysis (see module doc).
    """
    if not records:
        raise RecordError("nothing to merge: give at least one run record")
    if len(records) == 1:
        return _strip_analysis(records[0])
    t0 = min(r.started_at for r in records)
    taken: Set[int] = set()
    processes: List[Process] = []
    events: List[Event] = []
    marks: List[Mark] = []
    for i, (rec, node) in enumerate(zip(records, _node_numbers(records))):
        pids = {p.pid for p in rec.processes}
        offset = i * PID_STRIDE if pids & taken else 0
        taken |= {pid + offset for pid in pids}
        shift_t = rec.started_at - t0
        processes.extend(_shift_process(p, node, offset, shift_t) for p in rec.processes)
        events.extend(_node_events(rec, node, offset, shift_t))
        marks.extend(
            dataclasses.replace(m, t=m.t + shift_t, pid=_shift_pid(m.pid, offset))
            for m in rec.marks
        )
    end = max(r.started_at + r.duration_s for r in records)
    first = records[0]
    return RunRecord(
        command=list(first.command),
        cwd=first.cwd,
        started_at=t0,
        duration_s=end - t0,
        exit=_first_failure([r.exit for r in records]),
        limits=_tightest([r.limits for r in records]),
        x_axis="step" if any(r.x_axis == "step" for r in records) else first.x_axis,
        processes=processes,
        events=sorted(events, key=lambda e: e.t),
        memprobe_version=first.memprobe_version,
        marks=sorted(marks, key=lambda m: m.t),
    )


def _shift_process(p: Process, node: int, offset: int, shift_t: float) -> Process:
    """``p`` on the merged clock, its pids shifted by ``offset``, on ``node`` unless it
    says its own."""
    return dataclasses.replace(
        p,
        pid=p.pid + offset,
        parent_pid=_shift_pid(p.parent_pid, offset),
        node=p.node if p.node is not None else node,
        series={k: _shift_series(s, shift_t) for k, s in p.series.items()},
        census=[
            {**c, "t": c["t"] + shift_t} if isinstance(c.get("t"), (int, float)) else c
            for c in p.census
        ],
    )


def _node_events(rec: RunRecord, node: int, offset: int, shift_t: float) -> List[Event]:
    """``rec``'s events on the merged clock, and one that says where its processes came from."""
    events = [
        dataclasses.replace(e, t=e.t + shift_t, pid=_shift_pid(e.pid, offset)) for e in rec.events
    ]
    what = " ".join(rec.command)[:200]
    events.append(
        Event(
            t=shift_t,
            pid=None,
            kind="merged",
            message=f"node {node}: {len(rec.processes)} process(es) from "
            f"`{what}` (started {shift_t:+.1f} s)"
            + (f"; its pids are shown + {offset}" if offset else ""),
        )
    )
    return events


def _node_numbers(records: Sequence[RunRecord]) -> List[int]:
    """Each record's node: the node its processes report, else its position; a number
    claimed twice falls back to positions for all, so nodes stay distinct."""
    claimed: List[Optional[int]] = []
    for rec in records:
        seen = {p.node for p in rec.processes if p.node is not None}
        claimed.append(seen.pop() if len(seen) == 1 else None)
    known = [n for n in claimed if n is not None]
    if len(set(known)) != len(known) or len(known) != len(claimed):
        return list(range(len(records)))
    return [n for n in claimed if n is not None]


def _shift_pid(pid: Optional[int], offset: int) -> Optional[int]:
    return pid + offset if pid is not None and offset else pid


def _shift_series(s: Series, dt: float) -> Series:
    if not dt:
        return s
    return Series(step=list(s.step), t=[t + dt for t in s.t], value=list(s.value))


def _first_failure(exits: List[ExitInfo]) -> ExitInfo:
    oom = any(e.oom_killed for e in exits) or (
        False if all(e.oom_killed is False for e in exits) else None
    )
    for e in exits:
        if e.signal or e.code:
            return dataclasses.replace(e, oom_killed=oom)
    return dataclasses.replace(exits[0], oom_killed=oom)


def _tightest(limits: List[Limits]) -> Limits:
    known = [lim for lim in limits if lim.ram_bytes is not None]
    return min(known, key=lambda lim: lim.ram_bytes or 0) if known else limits[0]


def _strip_analysis(rec: RunRecord) -> RunRecord:
    return dataclasses.replace(rec, findings=[], signals={}, verdict="inconclusive")


__all__ = ["merge_records", "PID_STRIDE"]
