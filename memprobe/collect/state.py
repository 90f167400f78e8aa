"""The parent's state of a run while it is read: every agent's messages and every outside
sample ingested into per-process state (``ProcState``), events and marks kept.

Ingestion only: who each process is lives in ``roles``, the record is built by ``assemble``.
The launcher feeds it from the files as they grow; ``rebuild`` feeds it the same files
after the fact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set

from memprobe.bootstrap.memprobe_agent import wire
from memprobe.collect.censusbuf import MAX_CENSUS, CensusBuf
from memprobe.collect.coerce import opt_int, typed_header
from memprobe.collect.process import ProcState
from memprobe.collect.seriesbuf import BUFFER_BUCKETS, MAX_POINTS, SeriesBuf
from memprobe.record import Event, Limits, Mark

MAX_MARKS = 1000  # memprobe.mark() labels kept per run: the first ones and the latest


@dataclass
class RunState:
    command: List[str]
    cwd: str
    started_at: float  # wall clock
    limits: Limits = field(default_factory=Limits)
    procs: Dict[int, ProcState] = field(default_factory=dict)
    events: List[Event] = field(default_factory=list)
    marks: List[Mark] = field(default_factory=list)
    garbage_lines: int = 0
    foreign: Set[int] = field(default_factory=set)  # pids whose agent speaks another wire
    last_outside_t: float = 0.0  # latest tree sample on the run's clock
    # points per series in the record (and the scale of what is held, see SeriesBuf);
    # None: every point and every census, in memory and in the record
    max_points: Optional[int] = MAX_POINTS

    def proc(self, pid: int) -> ProcState:
        p = self.procs.get(pid)
        if p is None:
            full = self.max_points is None
            p = self.procs[pid] = ProcState(
                pid=pid,
                bucket_cap=None if full else BUFFER_BUCKETS,
                census=CensusBuf(None if full else MAX_CENSUS),
                outside_rss=SeriesBuf(None if full else BUFFER_BUCKETS),
            )
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
        if pid in self.foreign:
            return  # its agent speaks another wire version (see _header)
        p = self.proc(pid)
        kind = msg.get("k")
        if kind == wire.K_HEADER:
            self._header(p, msg)
            return
        t = self._run_t(p, msg.get("t"))
        step = opt_int(msg.get("step"))
        if kind == wire.K_SAMPLE:
            if step is not None:
                p.steps = max(p.steps, step)
            _add_values(p, msg, step, t)
        elif kind == wire.K_CENSUS:
            _add_values(p, msg, step, t)
            entry = {k: v for k, v in msg.items() if k not in ("k", "v")}
            entry["t"] = t
            p.census.append(entry)
        elif kind == wire.K_EVENT:
            kind_, message = str(msg.get("kind", "")), str(msg.get("message", ""))
            self.events.append(Event(t=t, pid=pid, kind=kind_, message=message))
        elif kind == wire.K_MARK:
            self._mark(Mark(t=t, pid=pid, step=step, label=str(msg.get("label", ""))))
        elif kind == wire.K_IDENTITY:
            _identity(p, msg)
        elif kind == wire.K_EXIT:
            p.exited = True
            steps = msg.get("steps")
            if isinstance(steps, int):
                p.steps = max(p.steps, steps)

    def _header(self, p: ProcState, msg: Dict[str, Any]) -> None:
        """An agent's first line; one that speaks another wire version is left out."""
        problem = wire.version_problem(msg.get("wire"))
        if problem is not None:
            self.foreign.add(p.pid)
            self.event(
                self._run_t(p, msg.get("t")),
                p.pid,
                "wire_mismatch",
                f"the agent in pid {p.pid} writes {problem}: its lines are left out "
                "(is another memprobe's bootstrap on PYTHONPATH?)",
            )
            return
        p.header = typed_header(msg)
        p.has_agent = True
        p.ppid = opt_int(msg.get("ppid"))  # a bool is no pid

    def _mark(self, mark: Mark) -> None:
        if len(self.marks) >= MAX_MARKS:
            del self.marks[MAX_MARKS // 2]  # the first half and the latest stay
        self.marks.append(mark)

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
            p.add(name, self._steps_for(p, t), t, value)

    def _steps_for(self, p: ProcState, t: float) -> Optional[int]:
        """The process' own step count, else that of its nearest ancestor that has one; None
        once that process has stopped stepping (an evaluation phase after training: those
        samples belong to the phase without steps, judged on seconds, see
        analysis/phases.py)."""
        q: Optional[ProcState] = p
        for _ in range(16):
            if q is None:
                return None
            if q.steps:
                return q.steps if not _stopped_stepping(q, t) else None
            q = self.procs.get(q.ppid) if q.ppid is not None else None
        return None

    def event(self, t: float, pid: Optional[int], kind: str, message: str) -> None:
        self.events.append(Event(t=t, pid=pid, kind=kind, message=message))

    def agent_errors(self, run_dir: str, t: float) -> None:
        """Events for the processes whose agent did not start (``agent-error-<pid>.txt``)."""
        for pid, line in wire.read_error_files(run_dir):
            self.event(t, pid, "agent_error", line)


# no step-tagged sample for this long (and for three of its recent step intervals): the
# process has stopped stepping
STOPPED_STEPPING_S = 2.0


def _stopped_stepping(p: ProcState, t: float) -> bool:
    if p.last_mark is None:
        return False
    rate = p.step_rate()
    quiet = max(STOPPED_STEPPING_S, 3.0 / rate) if rate else STOPPED_STEPPING_S
    return t - p.last_mark[0] > quiet


def _add_values(p: ProcState, msg: Dict[str, Any], step: Optional[int], t: float) -> None:
    values = msg.get("v")
    if isinstance(values, dict):
        for name, value in values.items():
            p.add(str(name), step, t, value)


def _identity(p: ProcState, msg: Dict[str, Any]) -> None:
    wid = msg.get("worker_id")
    if isinstance(wid, int) and not isinstance(wid, bool):
        p.worker_id = wid
    name = msg.get("mp_name")
    if isinstance(name, str):
        p.mp_name = name
