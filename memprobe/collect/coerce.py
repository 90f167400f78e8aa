"""Values read from the run's files: lines are data written inside the target, never
trusted; a field of the wrong type is dropped, not carried into the record."""

from __future__ import annotations

from typing import Any, Dict, Optional


def opt_int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def num(v: Any, default: float = 0.0) -> float:
    """A finite number from a line, or ``default`` (lines are data, never trusted)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        try:
            f = float(v)
        except OverflowError:
            return default
        return f if f == f and f not in (float("inf"), float("-inf")) else default
    return default


# header fields and the type each must have; a line with another type loses the field
HEADER_TYPES: Dict[str, Any] = {
    "argv": list,
    "orig_argv": list,
    "python": str,
    "executable": str,
    "cwd": str,
    "wall_t0": float,
    "t0": float,
    "pid": int,
    "ppid": int,
    "rank": int,
    "local_rank": int,
    "world_size": int,
    "local_world_size": int,
    "group_rank": int,
    "worker_id": int,
    "forked_from": int,
}


def typed_header(msg: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(msg)
    for key, typ in HEADER_TYPES.items():
        v = out.get(key)
        if v is None:
            out.pop(key, None)  # a null stands for nothing: readers fall back to their default
            continue
        if typ is float and isinstance(v, int) and not isinstance(v, bool):
            out[key] = v = num(v)
        if not isinstance(v, typ) or isinstance(v, bool) or (typ is float and num(v, -1.0) != v):
            del out[key]
        elif typ is list:
            out[key] = [str(a) for a in v]
    return out
