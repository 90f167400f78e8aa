"""Who this process is: argv, python, rank from the torchrun environment, DataLoader worker id.

The agent reports facts; the parent decides the role shown to people (it knows
the process tree). Some facts exist only once the target's own code has run a
little: a DataLoader worker learns its id when torch's worker loop starts, and
a multiprocessing child gets its name ("ForkPoolWorker-3") in its bootstrap. So
``poll`` looks for them for a while after a fork or spawn and reports each once
in an ``identity`` message.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any, Dict, Optional

from . import wire

_WORKER_POLL_S = 60.0
_MAIN_NAME = "MainProcess"


def _env_int(name: str) -> Optional[int]:
    value = os.environ.get(name, "")
    return int(value) if value.strip().lstrip("-").isdigit() else None


class Identity:
    def __init__(self, forked_from: Optional[int]) -> None:
        self.forked_from = forked_from
        self.worker_id: Optional[int] = None
        self.mp_name: Optional[str] = None
        self._poll_until = time.monotonic() + _WORKER_POLL_S
        # a spawned multiprocessing child shows its origin in argv
        argv = " ".join(getattr(sys, "orig_argv", sys.argv))
        self.mp_child = forked_from is not None or "multiprocessing" in argv

    def header(self, t0: float, forked_from: Optional[int]) -> Dict[str, Any]:
        return {
            "k": wire.K_HEADER,
            "wire": wire.WIRE_VERSION,
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "forked_from": forked_from,
            "argv": list(sys.argv),
            "orig_argv": list(getattr(sys, "orig_argv", sys.argv)),
            "executable": sys.executable,
            "python": sys.version.split()[0],
            "cwd": _cwd(),
            "host": _host(),
            "wall_t0": time.time() - (time.monotonic() - t0),
            "rank": _env_int("RANK"),
            "local_rank": _env_int("LOCAL_RANK"),
            "world_size": _env_int("WORLD_SIZE"),
            "local_world_size": _env_int("LOCAL_WORLD_SIZE"),
            "group_rank": _env_int("GROUP_RANK"),
            "mp_child": self.mp_child,
        }

    def poll(self, agent: Any) -> None:
        """Look for the multiprocessing name and torch's DataLoader worker id, for a while."""
        if not self.mp_child or self.worker_id is not None:
            return
        if time.monotonic() > self._poll_until:
            self.mp_child = False
            return
        message: Dict[str, Any] = {}
        if self.mp_name is None:
            name = _mp_name()
            if name is not None and name != _MAIN_NAME:
                self.mp_name = name
                message["mp_name"] = name
        info = _worker_info()
        if info is not None:
            self.worker_id = info[0]
            message["worker_id"] = info[0]
            message["num_workers"] = info[1]
        if message:
            message.update({"k": wire.K_IDENTITY, "t": agent.now()})
            agent.emit(message)


def _mp_name() -> Optional[str]:
    """multiprocessing's name for this process, read from the stdlib object's own dict."""
    mod = sys.modules.get("multiprocessing.process")
    proc = getattr(mod, "_current_process", None) if mod is not None else None
    fields = getattr(proc, "__dict__", None)
    if not isinstance(fields, dict):
        return None
    name = fields.get("_name")
    return name if isinstance(name, str) else None


def _worker_info() -> Optional[tuple[int, Optional[int]]]:
    """(worker id, num_workers) once torch's DataLoader worker loop has set them, else None.

    WorkerInfo is a plain torch class (a slotted frozen dataclass in recent torch, a
    class with an instance dict in older ones); only its two int fields are read, and
    only when the object's type is exactly that class.
    """
    mod = sys.modules.get("torch.utils.data._utils.worker")
    info = getattr(mod, "_worker_info", None) if mod is not None else None
    if info is None or type(info).__name__ != "WorkerInfo":
        return None
    values = []
    for field in ("id", "num_workers"):
        fields = info.__dict__ if "__dict__" in dir(type(info)) else None
        if isinstance(fields, dict) and field in fields:
            values.append(fields[field])
            continue
        slot = type(info).__dict__.get(field)
        values.append(
            slot.__get__(info, type(info))
            if slot is not None and type(slot).__name__ == "member_descriptor"
            else None
        )
    worker_id, num_workers = values
    if not isinstance(worker_id, int):
        return None
    return worker_id, num_workers if isinstance(num_workers, int) else None


def _host() -> Optional[str]:
    try:
        return socket.gethostname()
    except OSError:
        return None


def _cwd() -> Optional[str]:
    try:
        return os.getcwd()
    except OSError:
        return None
