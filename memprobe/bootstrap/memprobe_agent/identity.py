"""Who this process is: argv, python, rank from the torchrun environment, DataLoader worker id.

The agent reports facts; the parent decides the role shown to people (it knows
the process tree). A DataLoader worker learns its id only once torch's worker
loop starts, so ``poll`` looks for it for a while after a fork or spawn.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Dict, Optional

from . import wire

_WORKER_POLL_S = 60.0


def _env_int(name: str) -> Optional[int]:
    value = os.environ.get(name, "")
    return int(value) if value.strip().lstrip("-").isdigit() else None


class Identity:
    def __init__(self, forked_from: Optional[int]) -> None:
        self.forked_from = forked_from
        self.worker_id: Optional[int] = None
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
            "wall_t0": time.time() - (time.monotonic() - t0),
            "rank": _env_int("RANK"),
            "local_rank": _env_int("LOCAL_RANK"),
            "world_size": _env_int("WORLD_SIZE"),
            "group_rank": _env_int("GROUP_RANK"),
            "mp_child": self.mp_child,
        }

    def poll(self, agent: Any) -> None:
        """Look for torch's DataLoader worker info in children, for a while after start."""
        if not self.mp_child or self.worker_id is not None:
            return
        if time.monotonic() > self._poll_until:
            self.mp_child = False
            return
        mod = sys.modules.get("torch.utils.data._utils.worker")
        info = getattr(mod, "_worker_info", None) if mod is not None else None
        if info is None:
            return
        # WorkerInfo is a plain torch class holding ints; read its id field only
        worker_id = info.__dict__.get("id") if hasattr(info, "__dict__") else None
        if isinstance(worker_id, int):
            self.worker_id = worker_id
            agent.emit({"k": wire.K_IDENTITY, "t": agent.now(), "worker_id": worker_id,
                        "num_workers": info.__dict__.get("num_workers")})


def _cwd() -> Optional[str]:
    try:
        return os.getcwd()
    except OSError:
        return None
