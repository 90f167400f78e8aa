"""Rebuild a run record from a run folder (e.g. one whose memprobe parent was killed).

The folder alone is enough: the launcher's journal (``parent.jsonl``: meta, outside
samples, events, exit) and each agent's ``proc-<pid>.jsonl``.
"""

from __future__ import annotations

import heapq
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

from memprobe.bootstrap.memprobe_agent import wire
from memprobe.collect.assemble import build_record
from memprobe.collect.coerce import num, opt_int
from memprobe.collect.journal import K_META, K_OUTSIDE, PARENT_FILE
from memprobe.collect.seriesbuf import MAX_POINTS
from memprobe.collect.state import RunState
from memprobe.record import ExitInfo, Limits, RecordError, RunRecord

CHUNK = 4 * 1024 * 1024


def rebuild(run_dir: str, max_points: Optional[int] = MAX_POINTS) -> RunRecord:
    """Rebuild a run record from a run folder (e.g. one whose memprobe parent was killed).

    Files are read in chunks, never whole: a day-long run's files are hundreds of MB.
    ``max_points=None`` keeps every point and census (full resolution)."""
    if not os.path.isdir(run_dir):
        raise RecordError(f"{run_dir} is not a directory")
    parent_path = os.path.join(run_dir, PARENT_FILE)
    procs = list(wire.iter_proc_files(run_dir))
    if not os.path.exists(parent_path) and not procs:
        raise RecordError(f"{run_dir} holds no memprobe run (no {PARENT_FILE}, no proc-*.jsonl)")
    journal = _read_journal(parent_path)
    state = _new_state(journal.meta, procs, max_points)
    _replay(state, procs, parent_path if journal.outside else None)
    readable = any(p.has_agent or p.series for p in state.procs.values())
    if not (journal.meta or journal.exit or journal.outside or readable):
        raise RecordError(
            f"{run_dir} holds no readable memprobe data ({state.garbage_lines} unreadable line(s))"
        )
    for m in journal.events:
        state.event(
            num(m.get("t")), opt_int(m.get("pid")), str(m.get("kind")), str(m.get("message"))
        )
    exit, duration = _exit(state, journal.exit)
    if not state.command:
        state.command = _first_argv(state)
    state.agent_errors(run_dir, duration)
    return build_record(state, exit, duration)


@dataclass
class _JournalLines:
    """What the parent's journal says, outside samples aside (replayed with the agents')."""

    meta: Dict[str, Any] = field(default_factory=dict)
    exit: Dict[str, Any] = field(default_factory=dict)
    outside: int = 0  # outside samples in it
    events: List[Dict[str, Any]] = field(default_factory=list)


def _read_journal(path: str) -> _JournalLines:
    out = _JournalLines()
    if not os.path.exists(path):
        return out
    for m in _messages(path, [0]):
        if m["k"] == K_META:
            out.meta = m
        elif m["k"] == K_OUTSIDE:
            out.outside += 1  # read again by _replay, once the processes are known
        elif m["k"] == wire.K_EVENT:
            out.events.append(m)
        elif m["k"] == wire.K_EXIT:
            out.exit = m
    return out


def _new_state(
    meta: Dict[str, Any], procs: List[Tuple[int, str]], max_points: Optional[int]
) -> RunState:
    started_at = num(meta.get("started_at"))
    if not started_at:  # no journal: the earliest process start, as ingest needs it now
        walls = [num(_first_message(path).get("wall_t0")) for _, path in procs]
        started_at = min((w for w in walls if w), default=0.0)
    command = meta.get("command")
    return RunState(
        command=[str(a) for a in command] if isinstance(command, list) else [],
        cwd=str(meta.get("cwd", "")),
        started_at=started_at,
        limits=_limits(meta.get("limits")),
        max_points=max_points,
    )


def _replay(state: RunState, procs: List[Tuple[int, str]], parent_path: Optional[str]) -> None:
    """Every file at once, in time order, as the launcher saw them: an outside sample (USS,
    PSS) is stamped with the step its process had reached at that moment."""
    bads = [[0] for _ in procs]
    streams = [
        _timed(_messages(path, bad), state.started_at, pid) for (pid, path), bad in zip(procs, bads)
    ]
    if parent_path is not None:
        streams.append(_timed(_messages(parent_path, [0]), 0.0, None))
    for _, pid, m in heapq.merge(*streams, key=lambda item: item[0]):
        if pid is not None:
            state.ingest(pid, m)
        elif m["k"] == K_OUTSIDE and isinstance(m.get("pid"), int) and isinstance(m.get("v"), dict):
            argv = m.get("argv") if isinstance(m.get("argv"), list) else None
            state.ingest_outside(m["pid"], num(m.get("t")), m["v"], opt_int(m.get("ppid")), argv)
    state.garbage_lines += sum(b[0] for b in bads)


def _exit(state: RunState, exit_msg: Dict[str, Any]) -> Tuple[ExitInfo, float]:
    """The exit the journal recorded and the run's duration; without one (the parent did not
    finish), an unknown exit at the last sample, and an event that says so."""
    last_t = max([0.0] + [p.last_t for p in state.procs.values()])
    if exit_msg:
        oom = exit_msg.get("oom_killed")
        exit = ExitInfo(
            code=opt_int(exit_msg.get("code")),
            signal=opt_int(exit_msg.get("signal")),
            oom_killed=oom if isinstance(oom, bool) else None,
        )
        return exit, num(exit_msg.get("duration_s"), last_t) or last_t
    state.event(
        last_t,
        None,
        "rebuilt",
        "the memprobe parent did not finish this run; rebuilt from the run folder "
        "(exit status unknown)",
    )
    return ExitInfo(), last_t


def _timed(
    messages: Iterator[Dict[str, Any]], started_at: float, pid: Optional[int]
) -> Iterator[Tuple[float, Optional[int], Dict[str, Any]]]:
    """(time on the run's clock, pid, message); never decreasing within one file, so that
    files merge (an agent's threads may write a line slightly out of order)."""
    base = 0.0
    last = float("-inf")
    for m in messages:
        if pid is not None and m["k"] == wire.K_HEADER:
            wall = num(m.get("wall_t0"))
            base = wall - started_at if wall else 0.0
            yield last, pid, m
            continue
        t = m.get("t")
        if isinstance(t, (int, float)) and not isinstance(t, bool) and t == t:
            last = max(last, base + float(t))
        yield last, pid, m


def _first_message(path: str) -> Dict[str, Any]:
    try:
        with open(path, "rb") as f:
            line = f.readline(1 << 20)
    except OSError:
        return {}
    messages, _, _ = wire.decode_lines(line.rstrip(b"\n") + b"\n")
    return messages[0] if messages else {}


def _messages(path: str, bad: List[int]) -> Iterator[Dict[str, Any]]:
    """Every message of one file, read a chunk at a time (as ``wire.read_file`` reads it:
    a last line without its newline counts if it parses); ``bad[0]`` counts garbage."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, generator-safe
    except OSError:
        return
    tail = b""
    try:
        while True:
            data = f.read(CHUNK)
            if not data:
                break
            messages, tail, n_bad = wire.decode_lines(tail + data)
            bad[0] += n_bad
            yield from messages
    finally:
        f.close()
    if tail.strip():
        messages, _, n_bad = wire.decode_lines(tail + b"\n")
        bad[0] += n_bad
        yield from messages


def _limits(raw: Any) -> Limits:
    if not isinstance(raw, dict):
        return Limits()
    gpu = raw.get("gpu_bytes")
    return Limits(
        ram_bytes=opt_int(raw.get("ram_bytes")),
        ram_source=str(raw.get("ram_source", "unknown")),
        gpu_bytes=[g for g in gpu if opt_int(g) is not None] if isinstance(gpu, list) else [],
    )


def _first_argv(state: RunState) -> List[str]:
    for p in state.procs.values():
        argv = p.header.get("orig_argv")
        if isinstance(argv, list):
            return [str(a) for a in argv]
    return []
