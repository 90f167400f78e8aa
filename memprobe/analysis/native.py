"""Which handle on memory outside Python's objects grew (the agent's ``native.py``).

Memory that grows while nothing Python counts grows with it is taken outside Python's
objects (see ``grouping._outside_python``). Each census lists the in-memory SQLite
connections, ``bytearray`` buffers and ``io.BytesIO`` objects the user's roots lead to,
with one number that grows with what they hold; the one that grew between the first and
the last census that saw it is the holder a person would look at. A torch profiler is listed
with whether it was recording: one that recorded at every census that saw it (three or more;
the last may find it stopped by the program's clean-up) keeps every op of the run in its own
buffers: started and never stopped. Pure: records in.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from memprobe.analysis.verdict import INCONCLUSIVE, LEAK, SignalVerdict
from memprobe.analysis.wording import fmt_bytes, fmt_rate
from memprobe.record import CensusEntry, RunRecord

__all__ = ["Handle", "grown_handle", "grown_handles", "handle_backs", "rise"]

MIN_BUFFER_GROWTH = 1024 * 1024  # a buffer that gained less explains no leak
BUFFER_SHARE = 0.25  # of a memory climb, that a buffer's rise must be to make it a leak
MIN_RECORDING = 3  # censuses a profiler recorded at, every one that saw it: never stopped
# the units by rank: a buffer's bytes are the memory itself, a profiler never stopped keeps
# what it records, a connection's changed rows only say it was fed
_RANK = {"bytes": 2, "recording": 1}


@dataclass(frozen=True)
class Handle:
    holder: str
    type: str
    # "rows" (a connection's rows changed), "bytes" (a buffer's size) or "recording" (a
    # profiler on at every census that saw it: ``grown`` counts them)
    unit: str
    grown: float
    censuses: int

    @property
    def backs(self) -> bool:
        """A buffer that rose by what counts (see ``rise``) or a profiler that recorded at
        every census: memory outside Python's objects that a rising memory series can rest
        on (a connection's changed rows only say it was fed)."""
        return self.unit in _RANK

    def explains(self, growth: float) -> bool:
        """Whether it can be a memory climb of ``growth`` bytes: a profiler recording
        throughout, or a buffer that rose by a quarter of it (``BUFFER_SHARE``) or more."""
        return self.unit == "recording" or (
            self.unit == "bytes" and self.grown >= BUFFER_SHARE * growth
        )


def grown_handles(record: RunRecord) -> Dict[int, Handle]:
    """pid -> the handle that grew most in that process (buffers first: their bytes are
    the memory itself; a connection's changed rows only say it was fed)."""
    out: Dict[int, Handle] = {}
    for p in record.processes:
        best = grown_handle(p.census)
        if best is not None:
            out[p.pid] = best
    return out


def grown_handle(census: Sequence[CensusEntry]) -> Optional[Handle]:
    """Of the handles a process' censuses listed, the one that grew most (``_RANK``)."""
    seen: Dict[Tuple[str, str, str], List[float]] = {}
    for entry in census:
        handles = entry.get("native") if isinstance(entry, dict) else None
        for h in handles if isinstance(handles, list) else []:
            read = _read(h)
            if read is not None:
                seen.setdefault(read[:3], []).append(read[3])
    every = [
        Handle(holder, type_, unit, _grown(unit, values), len(values))
        for (holder, type_, unit), values in seen.items()
    ]
    least = {"bytes": MIN_BUFFER_GROWTH, "recording": MIN_RECORDING}
    grown = [h for h in every if h.grown >= least.get(h.unit, 1)]
    return max(grown, key=lambda h: (_RANK.get(h.unit, 0), h.grown), default=None)


def _grown(unit: str, values: Sequence[float]) -> float:
    if unit == "recording":
        # how many censuses it recorded at, when it recorded at every one that saw it but
        # perhaps the last (the program's own clean-up stops it at the end of the run)
        kept = values[:-1] if len(values) > 1 and values[-1] <= 0 else values
        return float(len(kept)) if all(v > 0 for v in kept) else 0.0
    return rise(values)


def rise(values: Sequence[float]) -> float:
    """How far a handle's readings rose above the first: to the last reading, or to the
    highest one when at least two later censuses each read a new high (a buffer shipped and
    emptied every few steps reads low at a census that falls just after a flush, while its
    peaks climb: a ``BytesIO`` truncated without a seek back); none for one emptied and
    then read high only once (see below). None at all for a sawtooth:
    a buffer that was emptied (read under half its highest so far) and filled again to a
    peak less than twice the one before (a spool per epoch, rolled over to disk at its
    size: wild_q/ok_spool_rollover read 0.3, 2.0, 8.3, 3.4, then 10.6 MB)."""
    if len(values) < 2:
        return 0.0
    peaks, begun = [values[0]], 0  # the highest reading of each fill; where the last began
    for i, value in enumerate(values[1:], 1):
        if value < peaks[-1] / 2:
            peaks.append(value)
            begun = i
        else:
            peaks[-1] = max(peaks[-1], value)
    if begun == len(values) - 1 and len(peaks) > 1:
        peaks.pop()  # emptied at the last census: that fill has just begun
    if any(b < 2 * a for a, b in zip(peaks, peaks[1:])):
        return 0.0
    highs, top = 0, values[0]
    for value in values[1:]:
        if value > top:
            highs, top = highs + 1, value
    if highs < 2 and len(peaks) > 1:
        # emptied, then one high read once, at the last census: a buffer rewritten for each
        # checkpoint, caught mid-write (wild_v/ok_cluster_sim_checkpoints busy read 2.2 MB,
        # five times 80 B, then 5.5 MB), not one whose fills climb
        return 0.0
    return (top if highs >= 2 else values[-1]) - values[0]


def handle_backs(
    verdicts: Dict[str, SignalVerdict], best: Optional[Handle]
) -> Dict[str, SignalVerdict]:
    """Memory that climbs by what counts, too unevenly to be clear of its noise, while the
    handle ``best`` (``grown_handle``) is a torch profiler that recorded at every census
    (see ``_grown``), or a buffer of the program's that rose by at least a quarter of that
    climb (``BUFFER_SHARE``; its peaks climbing, see ``rise``): that handle's memory is the
    climb (an allocator's staircase of its blocks), a leak."""
    if best is None or not best.backs:
        return verdicts
    out = dict(verdicts)
    for name, v in verdicts.items():
        if not (v.family == "memory" and v.verdict == INCONCLUSIVE and v.substantial):
            continue
        if not best.explains(v.growth):
            continue
        rate = fmt_rate(v.unit, "steps" if v.axis == "step" else "seconds")(v.slope)
        why = (
            f"a torch profiler records ({best.holder})"
            if best.unit == "recording"
            else f"`{best.holder}` (a {best.type}) rose by {fmt_bytes(best.grown)}"
        )
        out[name] = replace(
            v, verdict=LEAK, growing=True, reason=f"grows {rate} while {why}", needed=None
        )
    return out


def _read(h: Any) -> Optional[Tuple[str, str, str, float]]:
    if not isinstance(h, dict):
        return None
    holder, type_ = h.get("holder"), h.get("type")
    if not isinstance(holder, str) or not isinstance(type_, str):
        return None
    for key, unit in (("bytes", "bytes"), ("rows_changed", "rows"), ("recording", "recording")):
        value = h.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return holder, type_, unit, float(value)
    return None
