"""The agent's thread kept from starving for the GIL.

A thread that waited (``Event.wait``, a read of ``/proc``, a write of its file) must take
the GIL back before it runs again. CPython's waiter asks the holder to let go only when a
whole switch interval (5 ms) passed *without* the GIL changing hands; a main thread that
lets go for a moment and takes it straight back (an asyncio loop's ``epoll_wait(0)`` every
few milliseconds, any short system call in a tight loop) changes hands each time, so the
waiter never asks and waits on. Measured here on an asyncio service whose coroutines
compute (tests/scripts/async_busy.py): a thread sleeping 0.1 s woke 5 times in 5 s, and
its censuses took 2-3 s of wall time for 0.05 s of CPU; with a 1 ms switch interval it
woke 49 times.

So when the agent's thread waits again and again (``LATE_S`` for the GIL in ``TIMES`` of its
last ``OF`` cycles) the switch interval is set to ``SHARE_S`` — once, and only while it is
still the interpreter's own (a program that set its own is left alone). A shorter interval costs
nothing while the agent sleeps (it matters only while a thread waits for the GIL), and the
program's own threads share the GIL more finely from then on. The run says so (an event).
"""

from __future__ import annotations

import sys
from typing import Optional

LATE_S = 0.1  # a cycle this late is not the OS (a busy machine wakes a thread in ms)
TIMES, OF = 3, 8  # late cycles among the last ones
SHARE_S = 0.001


class GilShare:
    def __init__(self) -> None:
        self.start = sys.getswitchinterval()
        # the last OF cycles, a bit each (1: late), in an int: no container of the agent's
        # for a census in the same process (the pytest plugin, ``track()``) to see filling
        self.recent = 0
        self.done = False

    def woke(self, late_s: float) -> Optional[str]:
        """Called once per cycle of the agent's thread with the time it spent waiting for
        the GIL (the cycle's wall time less its sleep and its CPU); returns the event's text
        when it set the switch interval."""
        if self.done:
            return None
        self.recent = ((self.recent << 1) | (late_s > LATE_S)) & ((1 << OF) - 1)
        if bin(self.recent).count("1") < TIMES:
            return None
        self.done = True
        now = sys.getswitchinterval()
        if now != self.start or now <= SHARE_S:
            return None  # the program chose its own: not ours to change
        sys.setswitchinterval(SHARE_S)
        return (
            f"the agent's thread waited over {LATE_S:g} s for the GIL in {TIMES} of {OF} "
            "cycles (the program holds the GIL, letting go only for moments): switch interval "
            f"{now * 1000:g} ms -> {SHARE_S * 1000:g} ms so that it gets its turns"
        )
