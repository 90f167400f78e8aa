"""Rebuild a run record from a run folder (e.g. one whose memprobe parent was killed).

The folder alone is enough: the launcher's journal (``parent.jsonl``: meta, outside
samples, events, exit) and each agent's ``proc-<pid>.jsonl``.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List

from memprobe.bootstrap.memprobe_agent import wire
from memprobe.collect import PARENT_FILE, RunState, _num, _opt_int
from memprobe.record import ExitInfo, Limits, RecordError, RunRecord


def rebuild(run_dir: str) -> RunRecord:
    """Rebuild a run record from a run folder (e.g. one whose memprobe parent was killed)."""
    if not os.path.isdir(run_dir):
        raise RecordError(f"{run_dir} is not a directory")
    parent_path = os.path.join(run_dir, PARENT_FILE)
    procs = list(wire.iter_proc_files(run_dir))
    if not os.path.exists(parent_path) and not procs:
        raise RecordError(f"{run_dir} holds no memprobe run (no {PARENT_FILE}, no proc-*.jsonl)")
    meta: Dict[str, Any] = {}
    exit_msg: Dict[str, Any] = {}
    outside: List[Dict[str, Any]] = []
    parent_events: List[Dict[str, Any]] = []
    if os.path.exists(parent_path):
        msgs, _bad = wire.read_file(parent_path)
        for m in msgs:
            if m["k"] == "meta":
                meta = m
            elif m["k"] == "outside":
                outside.append(m)
            elif m["k"] == wire.K_EVENT:
                parent_events.append(m)
            elif m["k"] == wire.K_EXIT:
                exit_msg = m
    state = RunState(
        command=[str(a) for a in meta.get("command", [])]
        if isinstance(meta.get("command"), list)
        else [],
        cwd=str(meta.get("cwd", "")),
        started_at=_num(meta.get("started_at")),
        limits=_limits(meta.get("limits")),
    )
    last_t = 0.0
    for pid, path in procs:
        msgs, bad = wire.read_file(path)
        state.garbage_lines += bad
        for m in msgs:
            state.ingest(pid, m)
    readable = any(p.has_agent or p.series for p in state.procs.values())
    if not (meta or exit_msg or outside or readable):
        raise RecordError(
            f"{run_dir} holds no readable memprobe data ({state.garbage_lines} unreadable line(s))"
        )
    if not state.started_at:
        walls = [p.header.get("wall_t0") for p in state.procs.values()]
        state.started_at = min((w for w in walls if isinstance(w, float)), default=0.0)
    for m in outside:
        if isinstance(m.get("pid"), int) and isinstance(m.get("v"), dict):
            argv = m.get("argv") if isinstance(m.get("argv"), list) else None
            state.ingest_outside(m["pid"], _num(m.get("t")), m["v"], _opt_int(m.get("ppid")), argv)
    for m in parent_events:
        state.event(
            _num(m.get("t")), _opt_int(m.get("pid")), str(m.get("kind")), str(m.get("message"))
        )
    for p in state.procs.values():
        last_t = max(last_t, p.last_t)
    if exit_msg:
        oom = exit_msg.get("oom_killed")
        exit = ExitInfo(
            code=_opt_int(exit_msg.get("code")),
            signal=_opt_int(exit_msg.get("signal")),
            oom_killed=oom if isinstance(oom, bool) else None,
        )
        duration = _num(exit_msg.get("duration_s"), last_t) or last_t
    else:
        exit = ExitInfo()
        duration = last_t
        state.event(
            last_t,
            None,
            "rebuilt",
            "the memprobe parent did not finish this run; rebuilt from the run folder "
            "(exit status unknown)",
        )
    if not state.command:
        state.command = _first_argv(state)
    return state.build(exit, duration)


def _limits(raw: Any) -> Limits:
    if not isinstance(raw, dict):
        return Limits()
    gpu = raw.get("gpu_bytes")
    return Limits(
        ram_bytes=_opt_int(raw.get("ram_bytes")),
        ram_source=str(raw.get("ram_source", "unknown")),
        gpu_bytes=[g for g in gpu if _opt_int(g) is not None] if isinstance(gpu, list) else [],
    )


def _first_argv(state: RunState) -> List[str]:
    for p in state.procs.values():
        argv = p.header.get("orig_argv")
        if isinstance(argv, list):
            return [str(a) for a in argv]
    return []
