"""Ctrl-C while the target's main thread is inside the agent.

A census taken at a step boundary runs in the target's main thread, inside
``optimizer.step()`` or ``memprobe.step()``, for up to a few hundred milliseconds. A
SIGINT landing then would raise KeyboardInterrupt inside the agent: the census left half
done, and the target's traceback showing memprobe's frames, which a plain run never has.

So the census holds SIGINT back (``held``): a Python-level handler (the default one that
raises KeyboardInterrupt, or the program's own) is swapped for one that only notes the
signal, and swapped back afterwards. The noted signal is delivered again by the agent's
background thread (``deliver``) with ``_thread.interrupt_main()``, once the main thread has
left every agent frame: it then lands in the program's own code, as it would have in a
plain run, a fraction of a second late. A handler that is not Python's (SIG_DFL, SIG_IGN)
is left alone: such a signal never raises in Python code.
"""

from __future__ import annotations

import _thread
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Optional

# the agent's modules (``memprobe_agent.*`` under ``memprobe run``, or
# ``memprobe.bootstrap.memprobe_agent.*`` in-process) and ``memprobe.step()`` itself
_OURS = ("memprobe.", "memprobe_agent")
_MAX_DEPTH = 200


class Interrupts:
    def __init__(self) -> None:
        self.pending = False

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold SIGINT back for the block when this is the main thread; no-op elsewhere."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        try:
            previous = signal.getsignal(signal.SIGINT)
        except (ValueError, OSError):
            previous = None
        if not callable(previous):  # SIG_DFL, SIG_IGN or unknown: never raises in Python
            yield
            return

        def note(signum: int, frame: Any) -> None:
            self.pending = True

        try:
            signal.signal(signal.SIGINT, note)
        except (ValueError, OSError, TypeError):
            yield
            return
        try:
            yield
        finally:
            try:
                # the program may have installed a handler of its own in the meantime: never
                # put back an older one over it
                if signal.getsignal(signal.SIGINT) is note:
                    signal.signal(signal.SIGINT, previous)
            except (ValueError, OSError, TypeError):
                pass

    def deliver(self) -> bool:
        """From the background thread: deliver a held SIGINT once the main thread is out of
        the agent. True when delivered now."""
        if not self.pending or _main_in_agent():
            return False
        self.pending = False
        _thread.interrupt_main()
        return True


def _main_in_agent() -> bool:
    frames = sys._current_frames()
    main = threading.main_thread().ident
    f: Optional[Any] = frames.get(main) if main is not None else None
    del frames
    depth = 0
    found = False
    while f is not None and depth < _MAX_DEPTH:
        name = f.f_globals.get("__name__")
        if isinstance(name, str) and (name == "memprobe" or name.startswith(_OURS)):
            found = True
            break
        f = f.f_back
        depth += 1
    del f
    return found
