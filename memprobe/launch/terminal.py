"""The target's terminal: a pty each for its stdout and stderr, read by threads that hand the
output to the live view, and the relay the target's agent takes over if memprobe dies."""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Protocol


class OutputSink(Protocol):
    """What the readers hand the target's output to (the live view)."""

    def output(self, stream: str, data: bytes) -> None: ...


@dataclass
class Terminal:
    """The pty ends of one run: ``masters`` are read here, ``slaves`` are the target's stdout
    and stderr, ``relay_fds`` copies of memprobe's own stdout and stderr for the agent's relay.
    Empty when the output is not captured (the target writes to memprobe's terminal)."""

    masters: Dict[str, int] = field(default_factory=dict)
    slaves: Dict[str, int] = field(default_factory=dict)
    relay_fds: List[int] = field(default_factory=list)

    def pass_fds(self) -> List[int]:
        """The descriptors the target inherits: the relay's, when there is one."""
        return [*self.masters.values(), *self.relay_fds] if self.relay_fds else []

    def relay_config(self) -> Optional[Dict[str, Any]]:
        """The agent's ``pty_relay`` setting: if memprobe dies, the target's agent takes over
        copying its ptys to the terminal (else its prints fail with EIO)."""
        if not self.relay_fds:
            return None
        pairs = [
            [self.masters["stdout"], self.relay_fds[0]],
            [self.masters["stderr"], self.relay_fds[1]],
        ]
        return {"launcher_pid": os.getpid(), "fds": pairs}

    def close_child_ends(self) -> None:
        """Once the target is spawned (or failed to), its ends are its own."""
        for fd in [*self.slaves.values(), *self.relay_fds]:
            os.close(fd)

    def start_readers(self, sink: OutputSink) -> List[threading.Thread]:
        return [_start_reader(name, fd, sink) for name, fd in self.masters.items()]


def open_terminal(captures_output: bool) -> Terminal:
    """The ptys and the relay's descriptors when the live view captures the output."""
    if not captures_output:
        return Terminal()
    masters, slaves = _open_ptys()
    # the agent gets a copy of each master and of our stdout/err
    try:
        relay_fds = [os.dup(sys.stdout.fileno()), os.dup(sys.stderr.fileno())]
    except (OSError, ValueError, AttributeError):  # no real stdout (embedded, tests)
        relay_fds = []
    return Terminal(masters=masters, slaves=slaves, relay_fds=relay_fds)


def _open_ptys() -> tuple[Dict[str, int], Dict[str, int]]:
    """A pty each for the target's stdout and stderr: it still sees a terminal (colours, line
    buffering), and its output scrolls above the live table."""
    import fcntl
    import pty
    import termios

    masters: Dict[str, int] = {}
    slaves: Dict[str, int] = {}
    for name, real in (("stdout", sys.stdout), ("stderr", sys.stderr)):
        master, slave = pty.openpty()
        try:
            size = fcntl.ioctl(real.fileno(), termios.TIOCGWINSZ, b"\0" * 8)
            fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
        except OSError:
            pass
        masters[name], slaves[name] = master, slave
    return masters, slaves


def _start_reader(name: str, fd: int, sink: OutputSink) -> threading.Thread:
    def pump() -> None:
        try:
            while True:
                try:
                    data = os.read(fd, 65536)
                except OSError:  # EIO: every writer closed the pty
                    break
                if not data:
                    break
                sink.output(name, data)
        finally:
            os.close(fd)

    thread = threading.Thread(target=pump, name=f"memprobe-{name}", daemon=True)
    thread.start()
    return thread
