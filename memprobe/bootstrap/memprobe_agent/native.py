"""Handles on memory outside Python's objects, among the user's roots.

An in-memory SQLite database keeps its rows in SQLite's own allocator; a ``bytearray``
or an ``io.BytesIO`` grows its one buffer in place, a ``str`` built with ``+=`` is one
object rebuilt longer. Neither shows in any count of
objects: when memory grows and nothing Python counts grows with it, these are what a
person would look at. Each census lists the ones the user's roots lead to, with one
number that grows with what they hold: a connection's ``total_changes`` (rows inserted,
updated or deleted since it opened: a C getter, no SQL is run on the program's
connection), a buffer's ``sys.getsizeof`` (a ``tempfile.SpooledTemporaryFile``'s while it
is still in memory). A ``torch.profiler.profile`` (or the older
``torch.autograd.profiler.profile``) keeps every op it records in its own buffers until it
is stopped: it is listed with ``recording`` (1 while torch's profiler is on and this one
was started). The analysis names the one that grew, or that never stopped recording.
"""

from __future__ import annotations

import io
import sys
from typing import Any, Dict, List, Tuple

from . import roots
from .census import qualified

MAX_HANDLES = 16  # (big constant strings among them: a loaded text, a vocabulary)
MIN_BUFFER = 64 * 1024  # a bytearray this long or longer: a buffer, not a small field
MAX_BUFFERS = 256  # a list or tuple of buffers this long at most is listed as one handle
DEPTH = 3  # locals and globals, two levels below (``main:store.conn``, ``self.db.conn``)


def handles(deadline: float) -> List[Dict[str, Any]]:
    """[{holder, type, rows_changed | bytes | recording}] of the handles the user's roots
    lead to (the census' suspended generators among them: ``userroots.suspended_roots``)."""
    sqlite = sys.modules.get("sqlite3")
    conn_type = getattr(sqlite, "Connection", None) if sqlite is not None else None
    profilers = _profiler_types()
    spooled = getattr(sys.modules.get("tempfile"), "SpooledTemporaryFile", None)

    def buffer(value: Any) -> bool:
        return type(value) in (io.BytesIO, spooled)

    def native(value: Any) -> bool:
        cls = type(value)
        if cls in (bytearray, str, bytes):  # grown in place, or rebuilt longer (``s += line``)
            return len(value) >= MIN_BUFFER
        if profilers and issubclass(cls, profilers):
            return True
        if cls in (list, tuple):  # a few buffers side by side (one per partition): as one
            return 0 < len(value) <= MAX_BUFFERS and all(map(buffer, value))
        return buffer(value) or (conn_type is not None and cls is conn_type)

    def size(buf: Any) -> int:
        return _spooled_bytes(buf) if type(buf) is spooled else int(sys.getsizeof(buf))

    out: List[Dict[str, Any]] = []
    obj: Any = None
    found = roots.find_matching(native, deadline, MAX_HANDLES, DEPTH)
    for holder, obj in found:
        cls = type(obj)
        entry: Dict[str, Any] = {"holder": holder, "type": qualified(obj)}
        try:
            if cls is conn_type:
                entry["rows_changed"] = int(obj.total_changes)
            elif profilers and issubclass(cls, profilers):
                entry["recording"] = int(_recording(obj))
            elif cls in (list, tuple):
                entry["type"] = f"{qualified(obj)} of {qualified(obj[0])}"
                entry["bytes"] = sum(map(size, obj))
            else:
                entry["bytes"] = size(obj)
        except Exception:  # noqa: BLE001 - a closed connection, a buffer changed under us
            continue
        out.append(entry)
    obj = None
    found.clear()
    return out


def _spooled_bytes(spool: Any) -> int:
    """A ``tempfile.SpooledTemporaryFile``'s buffer while it is kept in memory (``_file``, an
    ``io.BytesIO`` or ``io.TextIOWrapper``, until it rolls over to a file on disk: then 0),
    read from the instance's ``__dict__``: no method of the program's object runs."""
    state = getattr(spool, "__dict__", {})
    buf = state.get("_file")
    if state.get("_rolled") or buf is None:
        return 0
    inner = buf if type(buf) is io.BytesIO else getattr(buf, "buffer", None)
    return int(sys.getsizeof(inner)) if type(inner) is io.BytesIO else 0


def _profiler_types() -> Tuple[type, ...]:
    """torch's profiler classes, where the program imported them (never imported here)."""
    out: List[type] = []
    for module, name in (
        ("torch.profiler.profiler", "profile"),
        ("torch.autograd.profiler", "profile"),
    ):
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type):
            out.append(cls)
    return tuple(out)


def _recording(prof: Any) -> bool:
    """torch's profiler is on (a C call) and this profiler object is the one that started
    it: a ``torch.profiler.profile`` has its inner profiler (set when a trace starts),
    an autograd one was entered. Attributes read from the instance's ``__dict__`` only."""
    torch = sys.modules.get("torch")
    enabled = getattr(getattr(torch, "autograd", None), "_profiler_enabled", None)
    if enabled is None or not enabled():
        return False
    state = getattr(prof, "__dict__", {})
    return state.get("profiler") is not None or bool(state.get("entered"))
