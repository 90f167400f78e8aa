"""Windowed tracemalloc: where the allocations that outlive a window of steps were made.

tracemalloc slows allocation-heavy code a lot, so by default (``auto``) it is
off and turned on only for a window of steps once a cheap signal looks like a
leak. Tracing starts empty at the window's start, so every trace still alive
at its end is an allocation made in the window that survived it: exactly where
a leak allocates. ``always`` traces the whole run in back-to-back windows;
``off`` never traces. A target that runs tracemalloc itself is left alone.
"""

from __future__ import annotations

import os
import tracemalloc
from typing import Any, Dict, Optional

from .roots import library_dirs

_HERE = os.path.dirname(os.path.abspath(__file__))
NFRAMES = 16  # a framework's forward is many frames deep below the user's line
TOP_LINES = 10
TOP_TRACEBACKS = 5


class TraceWindow:
    def __init__(
        self, mode: str, min_steps: int = 20, min_s: float = 1.0, max_s: float = 10.0
    ) -> None:
        self.mode = mode if mode in ("auto", "always", "off") else "auto"
        self.min_steps = min_steps
        self.min_s = min_s
        self.max_s = max_s
        self.active = False
        self.foreign = False
        self.start_step = 0
        self.start_t = 0.0
        self.windows = 0
        self._libs = library_dirs()

    def begin(self, step: int, now: float) -> bool:
        """Start a window (clears any earlier traces of ours). False if tracemalloc is not ours."""
        if self.mode == "off" or self.foreign:
            return False
        if tracemalloc.is_tracing() and not self.active:
            self.foreign = True  # the target traces for itself: never touch it
            return False
        if self.active:
            tracemalloc.clear_traces()
        else:
            tracemalloc.start(NFRAMES)
        self.active = True
        self.start_step, self.start_t = step, now
        return True

    def close(self) -> None:
        """Stop tracing if ours is still on (the in-process agent stops; the process lives)."""
        if self.active and not self.foreign and tracemalloc.is_tracing():
            tracemalloc.stop()
        self.active = False

    def due(self, step: int, now: float) -> bool:
        if not self.active:
            return False
        long_enough = step - self.start_step >= self.min_steps and now - self.start_t >= self.min_s
        return long_enough or now - self.start_t >= self.max_s

    def end(self, step: int, now: float) -> Optional[Dict[str, Any]]:
        """Snapshot the survivors, stop tracing (``always``: start the next window)."""
        if not self.active:
            return None
        snap = tracemalloc.take_snapshot()
        if self.mode == "always":
            tracemalloc.clear_traces()
        else:
            tracemalloc.stop()
            self.active = False
        result = self.summarise(snap, step, now)
        self.windows += 1
        if self.mode == "always":
            self.start_step, self.start_t = step, now
        return result

    def summarise(self, snap: Any, step: int, now: float) -> Dict[str, Any]:
        snap = snap.filter_traces(
            [
                tracemalloc.Filter(False, os.path.join(_HERE, "*"), all_frames=True),
                tracemalloc.Filter(False, tracemalloc.__file__),
                tracemalloc.Filter(False, "<frozen importlib._bootstrap*>"),
                tracemalloc.Filter(False, "<unknown>"),
            ]
        )
        lines = []
        for stat in snap.statistics("lineno")[:TOP_LINES]:
            frame = stat.traceback[0]
            lines.append(
                {
                    "line": f"{_short(frame.filename)}:{frame.lineno}",
                    "file": frame.filename,
                    "size": stat.size,
                    "count": stat.count,
                    "user": not self._is_library(frame.filename),
                }
            )
        tracebacks = []
        for stat in snap.statistics("traceback")[:TOP_TRACEBACKS]:
            frames = [f"{_short(f.filename)}:{f.lineno}" for f in stat.traceback]
            # the innermost of the user's frames (frames run oldest to most recent): the
            # line in their code that called into what allocated, not their main() call
            user = next(
                (
                    f"{_short(f.filename)}:{f.lineno}"
                    for f in reversed(stat.traceback)
                    if not self._is_library(f.filename)
                ),
                None,
            )
            tracebacks.append(
                {"size": stat.size, "count": stat.count, "traceback": frames, "user_line": user}
            )
        return {
            "start_step": self.start_step,
            "end_step": step,
            "seconds": round(now - self.start_t, 3),
            "mode": self.mode,
            "top": lines,
            "tracebacks": tracebacks,
        }

    def _is_library(self, filename: str) -> bool:
        if filename.startswith(("<", _HERE)):
            return True
        path = os.path.abspath(filename)
        return any(path.startswith(d + os.sep) for d in self._libs)


def _short(filename: str) -> str:
    """A path a person recognises: relative to the working directory when inside it."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return rel if not rel.startswith("..") else filename
