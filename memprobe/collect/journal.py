"""The parent's own journal in the run folder (``parent.jsonl``): meta, outside samples,
events, exit. With the agents' ``proc-<pid>.jsonl`` files it is all ``rebuild`` needs."""

from __future__ import annotations

import os
from typing import IO, Any, Dict, Optional

from memprobe.bootstrap.memprobe_agent import wire

PARENT_FILE = "parent.jsonl"  # the launcher's own journal: meta, outside samples, events, exit
K_META = "meta"  # the run: command, cwd, wall clock start, limits
K_OUTSIDE = "outside"  # one process' samples taken from outside (psutil, NVML)


class Journal:
    """Appends the parent's lines; the first write error stops it (the run goes on)."""

    def __init__(self, run_dir: str) -> None:
        fd = os.open(
            os.path.join(run_dir, PARENT_FILE), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600
        )  # like the agents' files: the run's data is the user's alone
        self._f: Optional[IO[str]] = open(fd, "a", encoding="utf-8")  # noqa: SIM115

    def write(self, message: Dict[str, Any]) -> None:
        if self._f is None:
            return
        try:
            self._f.write(wire.safe_encode(message))
            self._f.flush()
        except OSError:
            self._f = None

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
