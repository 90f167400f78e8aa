"""Parent-side state of a run: ingest wire messages, build the run record.

Pure bookkeeping (no threads, no rendering): the launcher feeds it messages
from the per-process files and outside samples; ``memprobe report RUN_DIR``
feeds it the same files after the fact to rebuild a record.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from memprobe import __version__
from memprobe.bootstrap.memprobe_agent import wire
from memprobe.record import (
    Event,
    ExitInfo,
    Limits,
    Process,
    RunRecord,
    Series,
)

PARENT_FILE = "parent.jsonl"  # the launcher's own journal: meta, outside samples, events, exit
MAX_POINTS = 4000  # per series in run.json; more are down-sampled keeping floor and peaks
SHORT_LIVED_S = 1.0  # children that lived less than this (or barely sampled) are left out
GONE_AFTER_S = 1.5  # a process the outside sampler has not seen for this long has ended


@dataclass
class SeriesBuf:
    step: List[Optional[int]] = field(default_factory=list)
    t: List[float] = field(default_factory=list)
    value: List[float] = field(default_factory=list)

    def add(self, step: Optional[int], t: float, value: float) -> None:
        self.step.append(step)
        self.t.append(t)
        self.value.append(value)


@dataclass
class ProcState:
    pid: int
    header: Dict[str, Any] = field(default_factory=dict)
    series: Dict[str, SeriesBuf] = field(default_factory=dict)
    census: List[Dict[str, Any]] = field(default_factory=list)
    steps: int = 0
    last_t: float = 0.0
    first_t: Optional[float] = None
    exited: bool = False
    worker_id: Optional[int] = None
    has_agent: bool = False
    ppid: Optional[int] = None
    mp_name: Optional[str] = None  # multiprocessing's name for it ("SpawnPoolWorker-2")
    program: Optional[List[str]] = None  # argv seen from outside (non-Python children)
    last_outside_t: Optional[float] = None
    outside_rss: SeriesBuf = field(default_factory=SeriesBuf)

    def rss(self) -> SeriesBuf:
        """The agent's RSS series, or the parent's outside view for processes without one."""
        return self.series.get(wire.RSS) or self.outside_rss

    def add(self, name: str, step: Optional[int], t: float, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return
        if value != value or value in (float("inf"), float("-inf")):
            return
        buf = self.series.get(name)
        if buf is None:
            buf = self.series[name] = SeriesBuf()
        buf.add(step, t, float(value))
        self.last_t = max(self.last_t, t)
        if self.first_t is None or t < self.first_t:
            self.first_t = t


@dataclass
class RunState:
    command: List[str]
    cwd: str
    started_at: float  # wall clock
    limits: Limits = field(default_factory=Limits)
    procs: Dict[int, ProcState] = field(default_factory=dict)
    events: List[Event] = field(default_factory=list)
    garbage_lines: int = 0
    last_outside_t: float = 0.0  # latest tree sample on the run's clock

    def proc(self, pid: int) -> ProcState:
        p = self.procs.get(pid)
        if p is None:
            p = self.procs[pid] = ProcState(pid=pid)
        return p

    def _run_t(self, p: ProcState, t: Any) -> float:
        """A process' own clock (seconds since its start) on the run's clock."""
        base = p.header.get("wall_t0")
        tt = float(t) if isinstance(t, (int, float)) else 0.0
        if isinstance(base, (int, float)):
            return base - self.started_at + tt
        return tt

    def ingest(self, pid: int, msg: Dict[str, Any]) -> None:
        """One message from an agent's file."""
        p = self.proc(pid)
        kind = msg.get("k")
        if kind == wire.K_HEADER:
            p.header = _typed_header(msg)
            p.has_agent = True
            ppid = msg.get("ppid")
            p.ppid = ppid if isinstance(ppid, int) else None
            return
        t = self._run_t(p, msg.get("t"))
        step = msg.get("step")
        step = step if isinstance(step, int) and not isinstance(step, bool) else None
        if kind == wire.K_SAMPLE:
            if step is not None:
                p.steps = max(p.steps, step)
            values = msg.get("v")
            if isinstance(values, dict):
                for name, value in values.items():
                    p.add(str(name), step, t, value)
        elif kind == wire.K_CENSUS:
            values = msg.get("v")
            if isinstance(values, dict):
                for name, value in values.items():
                    p.add(str(name), step, t, value)
            entry = {k: v for k, v in msg.items() if k not in ("k", "v")}
            entry["t"] = t
            p.census.append(entry)
        elif kind == wire.K_EVENT:
            self.events.append(
                Event(
                    t=t, pid=pid, kind=str(msg.get("kind", "")), message=str(msg.get("message", ""))
                )
            )
        elif kind == wire.K_IDENTITY:
            wid = msg.get("worker_id")
            if isinstance(wid, int) and not isinstance(wid, bool):
                p.worker_id = wid
            name = msg.get("mp_name")
            if isinstance(name, str):
                p.mp_name = name
        elif kind == wire.K_EXIT:
            p.exited = True
            steps = msg.get("steps")
            if isinstance(steps, int):
                p.steps = max(p.steps, steps)

    def ingest_outside(
        self,
        pid: int,
        t: float,
        values: Dict[str, Any],
        ppid: Optional[int] = None,
        argv: Optional[List[str]] = None,
    ) -> None:
        """Samples taken by the parent with psutil (t already on the run's clock)."""
        p = self.proc(pid)
        if ppid is not None and p.ppid is None:
            p.ppid = ppid
        if argv and p.program is None:
            p.program = [str(a) for a in argv]
        if wire.RSS in values:  # a tree sample (GPU samples carry no RSS)
            p.last_outside_t = t
            self.last_outside_t = max(self.last_outside_t, t)
        for name, value in values.items():
            if name == wire.RSS:
                # the agent's own RSS is step-aligned: outside RSS only stands in for processes
                # without an agent (decided at build time: the header may arrive later)
                p.outside_rss.add(None, t, float(value))
                continue
            # stamped with the last step the agent reported, so outside samples (USS, PSS,
            # NVML) join the step axis of step-aligned analysis; a process without steps of
            # its own (a DataLoader worker) takes those of the process it serves
            p.add(name, self._steps_for(p), t, value)

    def _steps_for(self, p: ProcState) -> Optional[int]:
        """The process' own step count, else that of its nearest ancestor that has one."""
        q: Optional[ProcState] = p
        for _ in range(16):
            if q is None:
                return None
            if q.steps:
                return q.steps
            q = self.procs.get(q.ppid) if q.ppid is not None else None
        return None

    def event(self, t: float, pid: Optional[int], kind: str, message: str) -> None:
        self.events.append(Event(t=t, pid=pid, kind=kind, message=message))

    # -- roles and the record --------------------------------------------------------------

    def identify(self) -> Dict[int, Who]:
        """pid -> who it is: role (main / worker / rank / child), rank, node, a short name.

        A DataLoader worker is a worker (its rank is the rank it serves). A process with
        torchrun's RANK and WORLD_SIZE is that rank, unless it merely inherited them: forked,
        started by multiprocessing, or run by a process of the same rank. The first agent
        whose parent runs none is main. Everything else (pools, subprocesses, non-Python
        programs) is a child, labelled with the rank it runs under.
        """
        out: Dict[int, Who] = {}
        main_seen = False
        for pid in sorted(self.procs, key=self._start_key):
            p = self.procs[pid]
            h = p.header
            parent = self.procs.get(p.ppid) if p.ppid is not None else None
            rank, local_rank, node = self._rank_env(p)
            inherited = (
                h.get("forked_from") is not None
                or bool(h.get("mp_child"))
                or (parent is not None and parent.has_agent and self._rank_env(parent)[0] == rank)
            )
            if p.worker_id is not None:
                role = wire.ROLE_WORKER
            elif rank is not None and not inherited:
                role = wire.ROLE_RANK
            elif (
                p.has_agent
                and not main_seen
                and h.get("forked_from") is None
                and not (parent is not None and parent.has_agent)
            ):
                role = wire.ROLE_MAIN
                main_seen = True
            else:
                role = wire.ROLE_CHILD
            out[pid] = Who(role, rank, local_rank, node, self._name(p))
        return out

    def roles(self) -> Dict[int, Tuple[str, Optional[int]]]:
        """pid -> (role, rank); see ``identify``."""
        return {pid: (w.role, w.rank) for pid, w in self.identify().items()}

    def _start_key(self, pid: int) -> Tuple[float, int]:
        p = self.procs[pid]
        wall = p.header.get("wall_t0")
        if isinstance(wall, (int, float)):
            return (float(wall) - self.started_at, pid)
        return (p.first_t if p.first_t is not None else float("inf"), pid)

    def _rank_env(self, p: ProcState) -> Tuple[Optional[int], Optional[int], Optional[int]]:
        """(rank, local rank, node) from the torchrun environment the process runs in; a
        process without an agent (no header) runs in its nearest agent ancestor's."""
        for _ in range(64):  # parent chains are short; the bound guards against pid reuse loops
            if p.has_agent:
                break
            parent = self.procs.get(p.ppid) if p.ppid is not None else None
            if parent is None:
                return (None, None, None)
            p = parent
        h = p.header
        world, local_world = _opt_int(h.get("world_size")), _opt_int(h.get("local_world_size"))
        rank = _opt_int(h.get("rank")) if world is not None else None
        if rank is None:
            return (None, None, None)
        # the node only means something when the job spans several of them
        several = local_world is not None and world is not None and world > local_world
        return (
            rank,
            _opt_int(h.get("local_rank")),
            _opt_int(h.get("group_rank")) if several else None,
        )

    @staticmethod
    def _name(p: ProcState) -> Optional[str]:
        if p.mp_name:
            return p.mp_name
        argv = p.program if not p.has_agent else p.header.get("argv")
        if not isinstance(argv, list) or not argv or p.header.get("forked_from") is not None:
            return None
        first = str(argv[0])
        if first == "-c":  # sys.argv hides the code: show its start from the full command line
            orig = p.header.get("orig_argv")
            code = (
                orig[orig.index("-c") + 1] if isinstance(orig, list) and "-c" in orig[:-1] else ""
            )
            return f"-c {' '.join(str(code).split())[:40]}".rstrip()
        return os.path.basename(first) or None

    def x_axis(self) -> str:
        return "step" if any(p.steps >= 5 for p in self.procs.values()) else "time"

    def short_lived(self, p: ProcState, who: Who) -> bool:
        """Too short or too thinly sampled to judge (a 50 ms pool task); main and ranks stay."""
        if who.role in (wire.ROLE_MAIN, wire.ROLE_RANK):
            return False
        series = _all_series(p).values()
        n = max((len(s.value) for s in series), default=0)
        ts = [t for s in series for t in (s.t[:1] + s.t[-1:])]
        lifetime = max(ts) - min(ts) if ts else 0.0
        return n < 3 or lifetime < SHORT_LIVED_S

    def build(self, exit: ExitInfo, duration_s: float) -> RunRecord:
        who = self.identify()
        processes: List[Process] = []
        omitted: Dict[str, int] = {}
        for pid in sorted(self.procs, key=lambda q: _order(who[q], self.procs[q].worker_id, q)):
            p, w = self.procs[pid], who[pid]
            if self.short_lived(p, w):
                key = re.sub(r"-\d+$", "", w.name) if w.name else w.role  # ForkPoolWorker-7
                omitted[key] = omitted.get(key, 0) + 1
                continue
            h = p.header
            processes.append(
                Process(
                    pid=pid,
                    parent_pid=p.ppid,
                    role=w.role,
                    rank=w.rank,
                    worker_id=p.worker_id,
                    argv=[str(a) for a in h.get("argv", [])]
                    if p.has_agent
                    else list(p.program or []),
                    python=h.get("python") if isinstance(h.get("python"), str) else None,
                    started_at=h.get("wall_t0") if isinstance(h.get("wall_t0"), float) else None,
                    ended="exit" if p.exited else ("vanished" if p.has_agent else None),
                    has_agent=p.has_agent,
                    steps=p.steps,
                    series={name: _downsample(buf) for name, buf in _all_series(p).items()},
                    census=p.census,
                    local_rank=w.local_rank,
                    node=w.node,
                    name=w.name,
                )
            )
        events = list(self.events)
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
        if self.garbage_lines:
            events.append(
                Event(
                    t=duration_s,
                    pid=None,
                    kind="garbage_lines",
                    message=f"{self.garbage_lines} unreadable line(s) skipped",
                )
            )
        return RunRecord(
            command=list(self.command),
            cwd=self.cwd,
            started_at=self.started_at,
            duration_s=duration_s,
            exit=exit,
            limits=self.limits,
            x_axis=self.x_axis(),
            processes=processes,
            events=sorted(events, key=lambda e: e.t),
            memprobe_version=__version__,
        )


@dataclass(frozen=True)
class Who:
    """What the parent makes of one process (see ``RunState.identify``)."""

    role: str
    rank: Optional[int] = None
    local_rank: Optional[int] = None
    node: Optional[int] = None
    name: Optional[str] = None


_ROLE_ORDER = {wire.ROLE_MAIN: 0, wire.ROLE_RANK: 1, wire.ROLE_WORKER: 2, wire.ROLE_CHILD: 3}


def _order(w: Who, worker_id: Optional[int], pid: int) -> Tuple[int, int, int, int, int]:
    """main, then ranks, then workers, then children; by node, rank and worker id."""
    big = 1 << 30
    return (
        _ROLE_ORDER.get(w.role, 9),
        w.node if w.node is not None else -1,
        w.rank if w.rank is not None else big,
        worker_id if worker_id is not None else big,
        pid,
    )


def _all_series(p: ProcState) -> Dict[str, SeriesBuf]:
    """The agent's series, plus the outside RSS for a process that has no agent."""
    if wire.RSS in p.series or not p.outside_rss.value:
        return p.series
    return {**p.series, wire.RSS: p.outside_rss}


def _opt_int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(v: Any, default: float = 0.0) -> float:
    """A finite number from a line, or ``default`` (lines are data, never trusted)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        try:
            f = float(v)
        except OverflowError:
            return default
        return f if f == f and f not in (float("inf"), float("-inf")) else default
    return default


# header fields and the type each must have; a line with another type loses the field
_HEADER_TYPES: Dict[str, Any] = {
    "argv": list,
    "orig_argv": list,
    "python": str,
    "executable": str,
    "cwd": str,
    "wall_t0": float,
    "t0": float,
    "pid": int,
    "ppid": int,
    "rank": int,
    "local_rank": int,
    "world_size": int,
    "local_world_size": int,
    "group_rank": int,
    "worker_id": int,
    "forked_from": int,
}


def _typed_header(msg: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(msg)
    for key, typ in _HEADER_TYPES.items():
        v = out.get(key)
        if v is None:
            out.pop(key, None)  # a null stands for nothing: readers fall back to their default
            continue
        if typ is float and isinstance(v, int) and not isinstance(v, bool):
            out[key] = v = _num(v)
        if not isinstance(v, typ) or isinstance(v, bool) or (typ is float and _num(v, -1.0) != v):
            del out[key]
        elif typ is list:
            out[key] = [str(a) for a in v]
    return out


def _downsample(buf: SeriesBuf, max_points: int = MAX_POINTS) -> Series:
    """Keep at most max_points, keeping each bucket's floor and peak in time order."""
    n = len(buf.value)
    if n <= max_points:
        return Series(step=list(buf.step), t=list(buf.t), value=list(buf.value))
    buckets = max_points // 2
    keep: List[int] = []
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        if hi <= lo:
            continue
        seg = range(lo, hi)
        i_min = min(seg, key=buf.value.__getitem__)
        i_max = max(seg, key=buf.value.__getitem__)
        keep.extend(sorted({i_min, i_max}))
    return Series(
        step=[buf.step[i] for i in keep],
        t=[buf.t[i] for i in keep],
        value=[buf.value[i] for i in keep],
    )
