"""Reading untrusted JSON into the record: every field checked, anything unusable a
``RecordError`` with a one-line reason, optional fields read with their defaults."""

from __future__ import annotations

import math
from typing import Any, List, Optional, cast

from memprobe.record.fields import Culprit, Projection
from memprobe.record.summary import Signals, SignalSummary


class RecordError(Exception):
    """A file that is not a usable memprobe run record; the message says why."""


def read_culprit(v: Any) -> Optional[Culprit]:
    if not isinstance(v, dict):
        return None
    if set(v) != set(Culprit.__annotations__):
        # kept as written (a hand-made or future record): readers .get() every key
        return cast(Culprit, v)
    return Culprit(
        type=opt_str(v["type"]),
        holder=opt_str(v["holder"]),
        location=opt_str(v["location"]),
        holds_autograd_graph=v["holds_autograd_graph"] is True,
    )


def read_projection(v: Any) -> Optional[Projection]:
    return cast(Projection, v) if isinstance(v, dict) else None


def read_signals(v: object, axis: str = "step") -> Signals:
    """The summaries, each value checked (``SignalSummary.from_json``); what is not an object
    is left out. ``axis``: the record's x-axis, for summaries that do not name theirs."""
    if not isinstance(v, dict):
        return {}
    return {
        str(pid): {
            str(k): SignalSummary.from_json(x, axis) for k, x in by.items() if isinstance(x, dict)
        }
        for pid, by in v.items()
        if isinstance(by, dict)
    }


def require(cond: bool, message: str) -> None:
    if not cond:
        raise RecordError(message)


def is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def opt_int(v: Any) -> Optional[int]:
    if is_int(v):
        return int(v)
    return int(v) if isinstance(v, float) and math.isfinite(v) else None


def opt_float(v: Any) -> Optional[float]:
    """A number as float; anything else (text, lists, ints too big for a float) as None."""
    if not is_num(v):
        return None
    try:
        return float(v)
    except OverflowError:
        return None


def as_list(v: Any) -> List[Any]:
    return v if isinstance(v, list) else []


def str_list(v: Any) -> List[str]:
    return [str(a) for a in as_list(v)]


def opt_str(v: Any) -> Optional[str]:
    return None if v is None else str(v)
