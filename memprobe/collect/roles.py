"""Who each process of a run is: main, a torchrun rank, a DataLoader worker or some other
child; its rank, local rank and node; a short name. Inferred from the agents' headers and
identity lines and the parent links the outside sampler saw."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from memprobe.bootstrap.memprobe_agent import wire
from memprobe.collect.coerce import opt_int
from memprobe.collect.process import ProcState
from memprobe.collect.state import RunState


@dataclass(frozen=True)
class Who:
    """What the parent makes of one process (see ``identify``)."""

    role: str
    rank: Optional[int] = None
    local_rank: Optional[int] = None
    node: Optional[int] = None
    name: Optional[str] = None


def identify(state: RunState) -> Dict[int, Who]:
    """pid -> who it is: role (main / worker / rank / child), rank, node, a short name.

    A DataLoader worker is a worker (its rank is the rank it serves). A process with
    torchrun's RANK and WORLD_SIZE is that rank, unless it merely inherited them: forked,
    started by multiprocessing, or run by a process of the same rank. The first agent
    whose parent runs none is main. Everything else (pools, subprocesses, non-Python
    programs) is a child, labelled with the rank it runs under.
    """
    procs = state.procs
    out: Dict[int, Who] = {}
    main_seen = False
    for pid in sorted(procs, key=lambda q: _start_key(procs[q], state.started_at)):
        p = procs[pid]
        h = p.header
        parent = procs.get(p.ppid) if p.ppid is not None else None
        rank, local_rank, node = _rank_env(p, procs)
        inherited = (
            h.get("forked_from") is not None
            or bool(h.get("mp_child"))
            or (parent is not None and parent.has_agent and _rank_env(parent, procs)[0] == rank)
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
        out[pid] = Who(role, rank, local_rank, node, _name(p))
    return out


_ROLE_ORDER = {wire.ROLE_MAIN: 0, wire.ROLE_RANK: 1, wire.ROLE_WORKER: 2, wire.ROLE_CHILD: 3}


def order(w: Who, worker_id: Optional[int], pid: int) -> Tuple[int, int, int, int, int]:
    """main, then ranks, then workers, then children; by node, rank and worker id."""
    big = 1 << 30
    return (
        _ROLE_ORDER.get(w.role, 9),
        w.node if w.node is not None else -1,
        w.rank if w.rank is not None else big,
        worker_id if worker_id is not None else big,
        pid,
    )


def _start_key(p: ProcState, started_at: float) -> Tuple[float, int]:
    wall = p.header.get("wall_t0")
    if isinstance(wall, (int, float)):
        return (float(wall) - started_at, p.pid)
    return (p.first_t if p.first_t is not None else float("inf"), p.pid)


def _rank_env(
    p: ProcState, procs: Dict[int, ProcState]
) -> Tuple[Optional[int], Optional[int], Optional[int]]:
    """(rank, local rank, node) from the torchrun environment the process runs in; a
    process without an agent (no header) runs in its nearest agent ancestor's."""
    for _ in range(64):  # parent chains are short; the bound guards against pid reuse loops
        if p.has_agent:
            break
        parent = procs.get(p.ppid) if p.ppid is not None else None
        if parent is None:
            return (None, None, None)
        p = parent
    h = p.header
    world, local_world = opt_int(h.get("world_size")), opt_int(h.get("local_world_size"))
    rank = opt_int(h.get("rank")) if world is not None else None
    if rank is None:
        return (None, None, None)
    # the node only means something when the job spans several of them
    several = local_world is not None and world is not None and world > local_world
    return (
        rank,
        opt_int(h.get("local_rank")),
        opt_int(h.get("group_rank")) if several else None,
    )


def _name(p: ProcState) -> Optional[str]:
    if p.mp_name:
        return p.mp_name
    argv = p.program if not p.has_agent else p.header.get("argv")
    if not isinstance(argv, list) or not argv or p.header.get("forked_from") is not None:
        return None
    first = str(argv[0])
    if first == "-c":  # sys.argv hides the code: show its start from the full command line
        orig = p.header.get("orig_argv")
        code = orig[orig.index("-c") + 1] if isinstance(orig, list) and "-c" in orig[:-1] else ""
        return f"-c {' '.join(str(code).split())[:40]}".rstrip()
    return os.path.basename(first) or None
