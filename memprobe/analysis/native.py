"""Which handle on memory outside Python's objects grew (the agent's ``native.py``).

Memory that grows while nothing Python counts grows with it is taken outside Python's
objects (see ``grouping._outside_python``). Each census lists the in-memory SQLite
connections, ``bytearray`` buffers and ``io.BytesIO`` objects the user's roots lead to,
with one number that grows with what they hold; the one that grew between the first and
the last census that saw it is the holder a person would look at. Pure: records in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from memprobe.record import CensusEntry, RunRecord

__all__ = ["Handle", "buffer_grew", "grown_handles", "rise"]

MIN_BUFFER_GROWTH = 1024 * 1024  # a buffer that gained less explains no leak


@dataclass(frozen=True)
class Handle:
    holder: str
    type: str
    unit: str  # "rows" (a connection's rows changed) or "bytes" (a buffer's size)
    grown: float
    censuses: int


def grown_handles(record: RunRecord) -> Dict[int, Handle]:
    """pid -> the handle that grew most in that process (buffers first: their bytes are
    the memory itself; a connection's changed rows only say it was fed)."""
    out: Dict[int, Handle] = {}
    for p in record.processes:
        best = _best(p.census)
        if best is not None:
            out[p.pid] = best
    return out


def _best(census: Sequence[CensusEntry]) -> Optional[Handle]:
    seen: Dict[Tuple[str, str, str], List[float]] = {}
    for entry in census:
        handles = entry.get("native") if isinstance(entry, dict) else None
        for h in handles if isinstance(handles, list) else []:
            read = _read(h)
            if read is not None:
                seen.setdefault(read[:3], []).append(read[3])
    every = [
        Handle(holder, type_, unit, rise(values), len(values))
        for (holder, type_, unit), values in seen.items()
    ]
    grown = [h for h in every if h.grown >= (MIN_BUFFER_GROWTH if h.unit == "bytes" else 1)]
    return max(grown, key=lambda h: (h.unit == "bytes", h.grown), default=None)


def rise(values: Sequence[float]) -> float:
    """How far a handle's readings rose above the first: to the last reading, or to the
    highest one when at least two later censuses each read a new high (a buffer shipped and
    emptied every few steps reads low at a census that falls just after a flush, while its
    peaks climb: a ``BytesIO`` truncated without a seek back)."""
    if len(values) < 2:
        return 0.0
    highs, top = 0, values[0]
    for value in values[1:]:
        if value > top:
            highs, top = highs + 1, value
    return (top if highs >= 2 else values[-1]) - values[0]


def buffer_grew(census: Sequence[CensusEntry]) -> bool:
    """A buffer the user's roots lead to rose by what counts (see ``rise``): memory outside
    Python's objects that a steadily rising memory series can rest on."""
    best = _best(census)
    return best is not None and best.unit == "bytes"


def _read(h: Any) -> Optional[Tuple[str, str, str, float]]:
    if not isinstance(h, dict):
        return None
    holder, type_ = h.get("holder"), h.get("type")
    if not isinstance(holder, str) or not isinstance(type_, str):
        return None
    for key, unit in (("bytes", "bytes"), ("rows_changed", "rows")):
        value = h.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return holder, type_, unit, float(value)
    return None
