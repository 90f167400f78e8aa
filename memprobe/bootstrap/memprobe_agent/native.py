"""Handles on memory outside Python's objects, among the user's roots.

An in-memory SQLite database keeps its rows in SQLite's own allocator; a ``bytearray``
or an ``io.BytesIO`` grows its one buffer in place. Neither shows in any count of
objects: when memory grows and nothing Python counts grows with it, these are what a
person would look at. Each census lists the ones the user's roots lead to, with one
number that grows with what they hold: a connection's ``total_changes`` (rows inserted,
updated or deleted since it opened: a C getter, no SQL is run on the program's
connection), a buffer's ``sys.getsizeof``. The analysis names the one that grew.
"""

from __future__ import annotations

import io
import sys
from typing import Any, Dict, List

from . import roots
from .census import qualified

MAX_HANDLES = 8
MIN_BUFFER = 64 * 1024  # a bytearray this long or longer: a buffer, not a small field
DEPTH = 3  # locals and globals, two levels below (``main:store.conn``, ``self.db.conn``)


def handles(deadline: float) -> List[Dict[str, Any]]:
    """[{holder, type, rows_changed | bytes}] of the handles the user's roots lead to."""
    sqlite = sys.modules.get("sqlite3")
    conn_type = getattr(sqlite, "Connection", None) if sqlite is not None else None

    def native(value: Any) -> bool:
        cls = type(value)
        if cls is bytearray:
            return len(value) >= MIN_BUFFER
        return cls is io.BytesIO or (conn_type is not None and cls is conn_type)

    out: List[Dict[str, Any]] = []
    obj: Any = None
    for holder, obj in roots.find_matching(native, deadline, limit=MAX_HANDLES, depth=DEPTH):
        cls = type(obj)
        entry: Dict[str, Any] = {"holder": holder, "type": qualified(obj)}
        try:
            if cls is conn_type:
                entry["rows_changed"] = int(obj.total_changes)
            else:
                entry["bytes"] = int(sys.getsizeof(obj))
        except Exception:  # noqa: BLE001 - a closed connection, a buffer changed under us
            continue
        out.append(entry)
    obj = None
    return out
