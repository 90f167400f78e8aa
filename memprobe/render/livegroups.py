"""The live table's process rows: grouped by role, with totals, within a row budget.

Pure: ``process_rows(state, verdicts)`` turns the run state into row data; the
live table only formats them. Order: main, then ranks, then DataLoader workers,
then other children. A group of two or more gets a header row with its totals
(RSS, USS and their change since each process started). When more processes live
than ``max_rows`` allows, each group keeps its most telling members (leaking,
then growing fastest) and one "… N more" row sums up the rest, so 16 or 64
processes stay one screen. Short-lived children (a 50 ms pool task) never get a
row; the total row counts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Set, Tuple

from memprobe.bootstrap.memprobe_agent import wire
from memprobe.collect.assemble import short_lived
from memprobe.collect.process import GONE_AFTER_S, ProcState
from memprobe.collect.roles import Who, identify
from memprobe.collect.state import RunState

USS = "uss_bytes"
# (pid, signal) -> (verdict, rate text), as the live judge gives them
Verdicts = Dict[Tuple[int, str], Tuple[str, str]]

_GROUPS = (
    (wire.ROLE_MAIN, "main", "main"),
    (wire.ROLE_RANK, "rank", "ranks"),
    (wire.ROLE_WORKER, "worker", "workers"),
    (wire.ROLE_CHILD, "child", "children"),
)
_SEVERITY = {"leak": 0, "leak USS": 0, "leak PSS": 0, "inconclusive": 1, "no_leak": 2, "": 3}
_SHORT = {wire.RSS: "RSS", USS: "USS", "pss_bytes": "PSS"}


@dataclass(frozen=True)
class Row:
    """One line of the process table. ``kind``: process, group, more or total."""

    kind: str
    label: str
    pid: Optional[int] = None
    steps: Optional[int] = None
    steps_per_s: Optional[float] = None
    rss: Optional[float] = None
    rss_delta: Optional[float] = None
    uss: Optional[float] = None
    uss_delta: Optional[float] = None
    trend: List[float] = field(default_factory=list)
    rate: str = ""
    verdict: str = ""
    ended: bool = False
    indent: bool = False


def process_rows(
    state: RunState, verdicts: Optional[Verdicts] = None, max_rows: int = 16
) -> List[Row]:
    """Rows for every process worth showing; at most ``max_rows`` process rows."""
    who = identify(state)
    shown: List[Tuple[ProcState, Who]] = []
    hidden = 0
    for p in state.procs.values():
        w = who[p.pid]
        if not len(p.rss()):
            continue
        if short_lived(p, w):
            hidden += 1
            continue
        shown.append((p, w))
    rows: List[Row] = []
    singular = {title: one for _, one, title in _GROUPS}
    groups = [(title, [pw for pw in shown if pw[1].role == role]) for role, _, title in _GROUPS]
    groups = [(title, members) for title, members in groups if members]
    # greedy: earlier groups (main, ranks) get every row they need, while each later
    # group keeps room for two of its members
    budget = max(max_rows, len(groups) * 2)
    for i, (title, members) in enumerate(groups):
        members.sort(key=lambda pw: _natural(pw[0], pw[1]))
        reserve = sum(min(2, len(m)) for _, m in groups[i + 1 :])
        quota = min(len(members), max(min(2, len(members)), budget - reserve))
        budget -= quota
        grouped = len(members) >= 2
        built = [_process_row(state, p, w, verdicts or {}, indent=grouped) for p, w in members]
        if grouped:
            rows.append(_sum_row("group", f"{title} ({len(members)})", built))
        keep = _keep(built, quota)
        # the trend (a pass over the kept points) only for the rows shown
        rows.extend(
            replace(r, trend=p.rss().values()) for r, (p, _) in zip(built, members) if id(r) in keep
        )
        rest = [r for r in built if id(r) not in keep]
        if rest:
            what = title if len(rest) > 1 else singular[title]
            rows.append(_sum_row("more", f"… {len(rest)} more {what}", rest, indent=True))
    if len(shown) > 1 or hidden:
        label = f"all ({len(shown)}" + (f"; {hidden} short-lived)" if hidden else ")")
        rows.append(_sum_row("total", label, [_process_row(state, p, w, {}) for p, w in shown]))
    return rows


def _natural(p: ProcState, w: Who) -> Tuple[int, int, int, int]:
    big = 1 << 30
    return (
        w.node if w.node is not None else -1,
        w.rank if w.rank is not None else big,
        p.worker_id if p.worker_id is not None else big,
        p.pid,
    )


def _label(p: ProcState, w: Who) -> str:
    node = f"node {w.node} " if w.node is not None else ""
    owner = f"{node}rank {w.rank} · " if w.rank is not None else node
    if w.role == wire.ROLE_RANK:
        return f"{node}rank {w.rank}" + (
            f" (local {w.local_rank})" if w.local_rank is not None and w.node is not None else ""
        )
    if w.role == wire.ROLE_WORKER:
        return f"{owner}worker {p.worker_id}"
    if w.role == wire.ROLE_MAIN:
        return "main" + (f" · {w.name}" if w.name else "")
    return f"{owner}{w.name or 'child'}"


def _process_row(
    state: RunState, p: ProcState, w: Who, verdicts: Verdicts, indent: bool = False
) -> Row:
    rss = p.rss()
    uss = p.series.get(USS)
    verdict, rate = _worst(p.pid, verdicts)
    # first and last samples only: a row costs the same at hour 1 and hour 24
    r0, r1 = rss.first, rss.last
    u0, u1 = (uss.first, uss.last) if uss is not None else (None, None)
    return Row(
        kind="process",
        label=_label(p, w),
        pid=p.pid,
        steps=p.steps or None,
        steps_per_s=_steps_per_s(p),
        rss=r1[2] if r1 else None,
        rss_delta=r1[2] - r0[2] if r0 and r1 else None,
        uss=u1[2] if u1 else None,
        uss_delta=u1[2] - u0[2] if u0 and u1 else None,
        rate=rate,
        verdict=verdict,
        ended=is_gone(state, p),
        indent=indent,
    )


def _worst(pid: int, verdicts: Verdicts) -> Tuple[str, str]:
    """RSS's verdict and rate, unless another memory signal (USS, PSS) leaks: then that one,
    named ("leak USS"). Rates keep their per-step (or per-second) part only."""
    shown: Tuple[str, str] = verdicts.get((pid, wire.RSS), ("", ""))
    if shown[0] != "leak":
        for signal in (USS, "pss_bytes"):
            verdict, rate = verdicts.get((pid, signal), ("", ""))
            if verdict == "leak":
                shown = (f"leak {_SHORT[signal]}", rate)
                break
    return shown[0], shown[1].split(" (")[0]


def _keep(rows: List[Row], quota: int) -> Set[int]:
    """ids of the rows to show: live before ended, leaking first, then fastest growing."""
    if len(rows) <= quota:
        return {id(r) for r in rows}

    def telling(r: Row) -> Tuple[bool, int, float]:
        growth = max(r.rss_delta or 0.0, r.uss_delta or 0.0)
        return (r.ended, _SEVERITY.get(r.verdict, 3), -growth)

    return {id(r) for r in sorted(rows, key=telling)[:quota]}


def _sum_row(kind: str, label: str, rows: List[Row], indent: bool = False) -> Row:
    def total(values: List[Optional[float]]) -> Optional[float]:
        known = [v for v in values if v is not None]
        return sum(known) if known else None

    live = [r for r in rows if not r.ended] or rows  # at the very end, the last values
    leaks = sum(1 for r in rows if r.verdict.startswith("leak"))
    return Row(
        kind=kind,
        label=label,
        rss=total([r.rss for r in live]),
        rss_delta=total([r.rss_delta for r in rows]),
        uss=total([r.uss for r in live]),
        uss_delta=total([r.uss_delta for r in rows]),
        verdict="leak" if leaks else "",
        rate=f"{leaks} leaking" if leaks and kind != "total" else "",
        indent=indent,
    )


def _steps_per_s(p: ProcState) -> Optional[float]:
    """Steps per second over the last few seconds (from the latest step-tagged samples)."""
    return p.step_rate()


def is_gone(state: RunState, p: ProcState) -> bool:
    """Ended: said goodbye, or the tree sampler has not seen it for a while."""
    if p.exited:
        return True
    last = p.last_outside_t
    return last is not None and state.last_outside_t - last > GONE_AFTER_S
