"""Reading the locals of running functions without keeping anything alive.

Up to Python 3.12, ``frame.f_locals`` of a function frame is a snapshot dict that
the frame keeps: reading it copies every local into that dict, where it stays
referenced until the next read or until the function returns. A holder search
that read ``main()``'s locals would keep a list the program dropped (``losses =
[]``, ``del batch``) alive for the rest of ``main()``: more memory than a plain
run, the opposite of a profiler's job. So after reading, the snapshot is
emptied again, where that is safe:

- never on 3.13+, where ``f_locals`` is a write-through proxy (PEP 667) and
  reading leaves nothing behind (emptying it would delete the locals);
- never for a module or class body (their ``f_locals`` *is* their namespace);
- never when the function itself may hold the snapshot: its code calls ``locals``,
  ``vars``, ``exec`` or ``eval`` as a builtin (``d = locals()`` is that dict), or reads
  an ``f_locals`` itself. A method of that name is no such call: ``model.eval()`` is in
  most training ``main()``s, and left the snapshot (last census' ``loss`` and its
  autograd graph) alive until the next census;
- never while a Python-level tracer or profiler may be running (a debugger,
  coverage's Python tracer): CPython calls such a hook between copying the
  locals into the snapshot and copying them back (``PyFrame_LocalsToFast(f,
  1)``, which deletes locals missing from it).

In those cases the read is left as CPython leaves it (the next read refreshes it).
"""

from __future__ import annotations

import os
import sys
import threading
import types
from typing import Any, Dict, Iterator, List, Optional, Tuple

CO_OPTIMIZED = 0x0001
_SNAPSHOT = sys.version_info < (3, 13)
_READS_LOCALS = frozenset(["locals", "vars", "exec", "eval"])
# modules that install a Python-level trace hook (a debugger, a Python tracer); ``profile``
# and ``trace`` are imported by torch itself (torch._dynamo imports cProfile), so only a
# ``-m profile`` / ``-m trace`` launch counts for those
_TRACERS = (
    "bdb",
    "pydevd",
    "_pydevd_bundle",
    "debugpy",
    "coverage",
    "hunter",
    "pudb",
    "wdb",
    "snoop",
    "pysnooper",
    "viztracer",
)
_TRACER_MAINS = ("profile", "trace", "pdb", "bdb", "coverage", "debugpy", "pudb")
_HERE = os.path.dirname(os.path.abspath(__file__))
# a framework runs the user's step a hundred frames or more below its `main()` (Lightning,
# callbacks in callbacks): the whole stack, up to the default recursion limit
MAX_DEPTH = 1000

CodeKey = Tuple[str, int, str]  # (co_filename, co_firstlineno, co_name)
_clear_ok: Dict[CodeKey, bool] = {}
OWN, OTHER, SUSPENDED = "own", "other", "suspended"  # whose frame is read


def code_key(code: types.CodeType) -> CodeKey:
    return (code.co_filename, code.co_firstlineno, code.co_name)


def _own_thread_hooked() -> bool:
    return sys.gettrace() is not None or sys.getprofile() is not None


def tracing_possible() -> bool:
    """A Python-level trace or profile hook may be active in another thread."""
    if _own_thread_hooked():
        return True
    threading = sys.modules.get("threading")
    for name in ("gettrace", "getprofile"):
        fn = getattr(threading, name, None) if threading is not None else None
        if fn is not None and fn() is not None:
            return True
    if any(m in sys.modules for m in _TRACERS):
        return True
    argv = list(getattr(sys, "orig_argv", sys.argv))
    return any(a == "-m" and b in _TRACER_MAINS for a, b in zip(argv, argv[1:]))


def _may_clear(frame: types.FrameType, whose: str) -> bool:
    code = frame.f_code
    if not _SNAPSHOT or not code.co_flags & CO_OPTIMIZED:
        return False
    key = code_key(code)
    ok = _clear_ok.get(key)
    if ok is None:
        ok = _clear_ok[key] = not _reads_locals(code)
    if not ok:
        return False
    if whose == SUSPENDED:
        return True  # no hook can be half-way through an event of a suspended generator
    if whose == OWN:
        # a hook mid-event on a frame of this thread would be above the agent's own code
        return not _own_thread_hooked()
    return not tracing_possible()


def _reads_locals(code: types.CodeType) -> bool:
    """The function may hold its own snapshot: it calls one of ``_READS_LOCALS`` as a
    global or builtin (attribute loads of those names are left aside), or reads an
    ``f_locals``. Decoded once per code object, only when one of the names occurs."""
    names = frozenset(code.co_names)
    if "f_locals" in names:
        return True
    if _READS_LOCALS.isdisjoint(names):
        return False
    try:
        import dis

        return any(
            ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval in _READS_LOCALS
            for ins in dis.get_instructions(code)
        )
    except Exception:  # noqa: BLE001 - an unreadable code object: assume it may
        return True


def local_items(frame: types.FrameType, whose: str) -> List[Tuple[str, Any]]:
    """A function frame's locals as (name, value) pairs; the frame's snapshot is emptied
    again where that is safe (see the module docstring). ``whose``: ``OWN`` (a frame of
    the calling thread), ``OTHER`` (another thread's) or ``SUSPENDED`` (a generator's)."""
    try:
        loc = frame.f_locals
    except Exception:  # noqa: BLE001
        return []
    try:
        items = [(k, v) for k, v in loc.items() if type(k) is str]
    except Exception:  # noqa: BLE001 - changed under us
        items = []
    if type(loc) is dict and loc is not frame.f_globals and _may_clear(frame, whose):
        loc.clear()
    return items


def read_local(frame: types.FrameType, name: str, whose: str) -> Any:
    """One local of a frame (None when unbound), leaving no snapshot behind where safe."""
    for k, v in local_items(frame, whose):
        if k == name:
            return v
    return None


def generator_whose(gen: Any) -> str:
    return OTHER if gen.gi_running else SUSPENDED


def thread_stacks() -> List[Tuple[str, List[types.FrameType]]]:
    """Each thread's function frames, innermost first, and whose they are (``OWN`` for the
    calling thread); the agent's own frames left out.

    The calling thread's stack starts at the caller, never at this function's own frame:
    holding one's own frame object in a local is a reference cycle, and a frame kept by
    a cycle keeps its callers' frames and every local in them (the target's tensors)
    alive until the cyclic collector runs."""
    me = threading_ident()
    try:
        current = sys._current_frames()
    except Exception:  # noqa: BLE001
        return []
    current.pop(me, None)  # this very frame: see above
    tops: List[Tuple[str, Any]] = [(OWN, sys._getframe(1))]
    # the main thread's before the others': what main() holds is named by main()'s locals,
    # not by a worker thread's ``self`` (``main:pool._scratch``, not ``_run:self._scratch``)
    first = threading.main_thread().ident
    tops.extend((OTHER, f) for _, f in sorted(current.items(), key=lambda kv: kv[0] != first))
    del current
    out: List[Tuple[str, List[types.FrameType]]] = []
    top: Any = None
    f: Optional[types.FrameType] = None
    for whose, top in tops:
        stack: List[types.FrameType] = []
        f = top
        depth = 0
        while f is not None and depth < MAX_DEPTH:
            code = f.f_code
            if not code.co_filename.startswith(_HERE) and code.co_name != "<module>":
                stack.append(f)
            f = f.f_back
            depth += 1
        out.append((whose, stack))
    del tops, top, f
    return out


def threading_ident() -> int:
    import _thread

    return _thread.get_ident()


def user_frames() -> Iterator[Tuple[types.FrameType, str]]:
    """(frame, whose) for the function frames of every thread, innermost first."""
    for whose, stack in thread_stacks():
        for f in stack:
            yield f, whose


def find_frame(key: CodeKey) -> Optional[Tuple[types.FrameType, str]]:
    """The innermost running frame of the function ``key`` names, in any thread."""
    for f, whose in user_frames():
        if code_key(f.f_code) == key:
            return f, whose
    return None


def running_by_key() -> Dict[CodeKey, Tuple[types.FrameType, str]]:
    """The innermost running frame of each function, by code key (one look for a poll)."""
    out: Dict[CodeKey, Tuple[types.FrameType, str]] = {}
    for f, whose in user_frames():
        out.setdefault(code_key(f.f_code), (f, whose))
    return out
