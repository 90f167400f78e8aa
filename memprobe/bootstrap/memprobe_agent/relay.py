"""Keeps the target's terminal output flowing if the memprobe parent dies (``--live`` only).

With the live view the target writes into ptys whose master side memprobe reads. A
SIGKILLed memprobe closes those masters, and every later print of the target would fail
with EIO. The launcher hands the process it starts a copy of each master and of its own
stdout/stderr; once the parent is gone, this copies what the target writes to where
memprobe would have shown it. Standard library only, like the rest of the agent.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Optional, Tuple


class PtyRelay:
    def __init__(self, launcher_pid: int, pairs: List[Tuple[int, int]]) -> None:
        self.launcher_pid = launcher_pid
        self.pairs = pairs
        for fd in self._fds():
            os.set_inheritable(fd, False)  # programs the target execs must not hold them
        self.started = False

    def _fds(self) -> List[int]:
        return [fd for pair in self.pairs for fd in pair]

    def poll(self) -> bool:
        """Start copying once the parent is gone; True when it started now."""
        if self.started or os.getppid() == self.launcher_pid:
            return False
        self.started = True
        for master, real in self.pairs:
            threading.Thread(
                target=_copy, args=(master, real), name="memprobe-relay", daemon=True
            ).start()
        return True

    def close(self) -> None:
        """In a forked child: relaying is the launched process' job; drop the copies."""
        for fd in self._fds():
            try:
                os.close(fd)
            except OSError:
                pass
        self.pairs = []
        self.started = True


def _copy(src: int, dst: int) -> None:
    while True:
        try:
            data = os.read(src, 65536)
        except OSError:  # EIO: every writer closed its side
            return
        if not data:
            return
        try:
            while data:
                data = data[os.write(dst, data) :]
        except OSError:
            return


def from_config(config: Dict[str, Any]) -> Optional[PtyRelay]:
    """The relay for the process memprobe launched itself (not its children), if any."""
    raw = config.get("pty_relay")
    if not isinstance(raw, dict) or os.getppid() != raw.get("launcher_pid"):
        return None
    try:
        pairs = [(int(m), int(r)) for m, r in raw["fds"]]
        return PtyRelay(int(raw["launcher_pid"]), pairs)
    except (OSError, ValueError, TypeError, KeyError):
        return None
