"""When a census may hold references to every object without breaking another thread.

``gc.get_objects()`` hands out references to tuples that another thread may still be
building: ``tuple(generator)`` grows its tuple with ``_PyTuple_Resize``, which demands a
reference count of 1, and fails with "SystemError: bad argument to internal function"
in *that* thread if a census holds the tuple at that moment (python/cpython#39117;
reproduced by tests/scripts/tuple_builder.py). The GIL cannot be kept from threads that
already wait for it, so a census is simply put off while any other thread is inside a
generator's frame that a call resumed (where such a tuple may be being filled), and while
the program is still importing (imports build many tuples this way). Not for coroutine and
async generator frames: ``tuple()`` cannot consume them, and a ``tuple(gen)`` a coroutine
runs puts the generator's own frame above it. An asyncio program is inside a coroutine
whenever its loop is not waiting, and was put off for its whole run
(wild_r/leak_read_your_writes: no census in 15 s). Nor for a generator that a loop of
Python code resumed (its consumer's frame is at ``FOR_ITER`` or ``SEND``: a ``for``, a
comprehension, ``yield from``): no C function is filling a tuple from it. A program whose
loop runs inside a generator (``for cycle in simulate(cell):`` with the work in
``simulate``) was put off for all but the second or two it spent outside one
(wild_s/leak_cell_trace_default: two censuses in 19 s).
"""

from __future__ import annotations

import gc
import opcode
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Optional

_ITERATING = 0x20  # CO_GENERATOR
_MAX_DEPTH = 200
# what a Python frame that resumed a generator is at when a loop of its own did it
_LOOPS = frozenset(opcode.opmap[n] for n in ("FOR_ITER", "SEND", "YIELD_FROM") if n in opcode.opmap)
_CACHE = opcode.opmap.get("CACHE")  # 3.11+: inline caches after an instruction (opcode 0)


def others_mid_iteration(skip: Iterable[Optional[int]]) -> bool:
    """True if a thread other than ``skip`` has a generator-like frame on its stack."""
    skipped = set(skip)
    current = sys._current_frames()
    for ident in skipped:  # never hold this thread's own frame: a reference cycle
        if ident is not None:  # (see frames.thread_stacks)
            current.pop(ident, None)
    found = False
    frame: Any = None
    f: Any = None
    for frame in current.values():
        f = frame
        depth = 0
        while f is not None and depth < _MAX_DEPTH:
            if f.f_code.co_flags & _ITERATING and not _resumed_by_a_loop(f):
                found = True
                break
            f = f.f_back
            depth += 1
        if found:
            break
    del current, frame, f
    return found


def _resumed_by_a_loop(gen_frame: Any) -> bool:
    """The generator frame's consumer is a Python frame at ``FOR_ITER`` or ``SEND`` (its
    last instruction, read past the inline caches a specialized instruction leaves it on:
    3.12), not at a call (``tuple(gen)``, ``next(gen)``)."""
    caller = gen_frame.f_back
    if caller is None:
        return False
    code = caller.f_code.co_code
    i = caller.f_lasti
    while i > 0 and _CACHE is not None and code[i] == _CACHE:
        i -= 2
    return 0 <= i < len(code) and code[i] in _LOOPS


# no module imported for this long: the program's own work has begun (torch's import pauses
# for shared libraries; a census in such a pause counts the import, not the program)
IMPORT_QUIET_S = 0.5


class ImportWatch:
    """Knows whether the program is still importing: sys.modules changed lately.

    ``settled(quiet_s)``: no import for ``quiet_s`` seconds. A big import pauses between
    modules (a shared library loading) and a look in such a pause must not pass for the
    program's own work having started. An import adds modules by the dozen (torch: over a
    thousand in a few seconds); a program that makes modules itself (one per trial
    ``exec``'d into ``sys.modules``, a plugin loaded per request) adds them one at a time,
    at most ``TRICKLE_PER_S`` a second: that is its work, not an import (such a program
    had no census in a 20 s run).
    """

    TRICKLE_PER_S = 8.0

    def __init__(self) -> None:
        self._count = len(sys.modules)
        self._seen_at = self._changed_at = time.monotonic()

    def settled(self, quiet_s: float = 0.0) -> bool:
        count = len(sys.modules)
        now = time.monotonic()
        moved, elapsed = abs(count - self._count), now - self._seen_at
        self._count, self._seen_at = count, now
        if moved > max(1.0, self.TRICKLE_PER_S * elapsed):
            self._changed_at = now
            return False
        return now - self._changed_at >= quiet_s


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off for a census taken in the main thread (at a step boundary).

    The census makes lists and dicts as long as the heap's containers; counted as new
    objects they set off collections in its middle, among them full ones (80 ms on a
    torch script's 290k objects, one census in four here) that the program would not have
    had then. What the census made is gone before the collector is back, so the counts
    that trigger collections stand where the program left them. Only in the main thread:
    the program does not run meanwhile, so it cannot have switched the collector itself;
    and a collector it had switched off stays off."""
    if threading.current_thread() is not threading.main_thread() or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
