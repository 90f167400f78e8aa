"""How a process' census list becomes a :class:`~memprobe.analysis.census.Profile`: the
censuses placed on the step axis, each container's growth between them, and the ends of
the containers' dense length series, which say how long they are now.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from memprobe.analysis.census import Container, Profile, as_list, num
from memprobe.analysis.series import Array, container_holder

# holder -> (x, length) at the first and at the last point of its dense length series
Lengths = Dict[str, Tuple[float, float, float, float]]


def build_profile(
    census: Sequence[Any],
    active: Optional[Iterable[str]] = None,
    lengths: Optional[Lengths] = None,
    settled: Optional[Iterable[str]] = None,
    clock: Optional[Tuple[Array, Array]] = None,
) -> Profile:
    """Profile of one process from its census list (``Process.census``); ``active``: the
    holders whose length series grows, when the verdicts are known; ``lengths``: their
    dense length series' ends (the length now, not at the last census); ``clock``: the
    process' step clock (see ``series.step_clock``), which places the censuses taken
    while a stepping program paused between its steps (an evaluation between epochs)
    on the step axis, just after the step before them."""
    full = [c for c in census if isinstance(c, dict) and isinstance(c.get("types"), dict)]
    stepped = [c for c in full if isinstance(c.get("step"), int)]
    axis_step = len(stepped) >= 2
    if axis_step:
        entries, xs = _on_steps(full, clock)
    else:
        entries, xs = full, [num(c.get("t")) or 0.0 for c in full]
    windows = [
        c["tracemalloc"]
        for c in census
        if isinstance(c, dict) and isinstance(c.get("tracemalloc"), dict)
    ]
    boxes = _containers(entries, xs)
    if lengths:
        boxes = [_with_series(b, lengths.get(b.holder)) for b in boxes]
    return Profile(
        entries=entries,
        xs=xs,
        containers=boxes,
        windows=windows,
        per="step" if axis_step else "second",
        active=frozenset(active) if active is not None else None,
        settled=frozenset(settled or ()),
    )


def _on_steps(
    full: List[Dict[str, Any]], clock: Optional[Tuple[Array, Array]]
) -> Tuple[List[Dict[str, Any]], List[float]]:
    """The step-tagged censuses at their steps, and those taken without a step while the
    program was between two of its steps at ``step + 0.5`` (a hundredth more for each
    further one in the same pause). Censuses after the last step are left out: that
    phase is judged on seconds (phases.py)."""
    times, steps = clock if clock is not None and len(clock[0]) else (None, None)
    entries: List[Dict[str, Any]] = []
    xs: List[float] = []
    for c in full:
        step = c.get("step")
        if isinstance(step, int):
            x = float(step)
        else:
            t = num(c.get("t"))
            if t is None or times is None or steps is None or not times[0] <= t < times[-1]:
                continue
            x = float(steps[int(np.searchsorted(times, t, side="right")) - 1]) + 0.5
        if xs and x <= xs[-1]:
            if isinstance(step, int):
                continue  # out of order: keep the axis increasing
            x = xs[-1] + 0.01
        entries.append(c)
        xs.append(x)
    return entries, xs


def _containers(entries: List[Dict[str, Any]], xs: List[float]) -> List[Container]:
    """Each holder's growth from the census before it was first seen to its last census."""
    first_seen: Dict[str, int] = {}
    last: Dict[str, Tuple[int, Dict[str, Any]]] = {}  # the census where it was longest
    last_box_bytes: Dict[str, Any] = {}  # the latest size of its items
    for i, entry in enumerate(entries):
        for box in as_list(entry.get("containers")):
            if isinstance(box, dict) and isinstance(box.get("holder"), str):
                first_seen.setdefault(box["holder"], i)
                if num(box.get("bytes")) is not None:
                    last_box_bytes[box["holder"]] = box.get("bytes")
                old = last.get(box["holder"])
                if old is None or (num(box.get("len")) or 0) >= (num(old[1].get("len")) or 0):
                    last[box["holder"]] = (i, box)
    out: List[Container] = []
    for holder, (i, box) in last.items():
        j = first_seen[holder]
        length = int(num(box.get("len")) or 0)
        base = num(box.get("first_len"))
        base_x = xs[j - 1] if j > 0 else xs[j]
        if base is None:
            base, base_x = length, xs[i]
        growth = length - int(base)
        span = xs[i] - base_x
        per_step = growth / span if span > 0 else 0.0
        elems = [str(t) for t in as_list(box.get("elem_types")) if isinstance(t, str)]
        keys = [str(t) for t in as_list(box.get("key_types")) if isinstance(t, str)]
        chain = [str(c) for c in as_list(box.get("chain"))]
        out.append(
            Container(
                holder=holder,
                type=str(box.get("type", "?")),
                len=length,
                per_step=per_step,
                growth=growth,
                elem_types=elems,
                key_types=keys,
                chain=chain,
                complete=bool(box.get("complete", True)),
                scalar=bool(box.get("scalar", False)),
                bytes=num(last_box_bytes.get(holder)),
                owners=[str(o) for o in as_list(box.get("owners")) if isinstance(o, str)],
            )
        )
    return out


def _with_series(box: Container, ends: Optional[Tuple[float, float, float, float]]) -> Container:
    """A container's length now and its growth rate, from its dense series where it has one."""
    if ends is None:
        return box
    x0, n0, x1, n1 = ends
    if x1 <= x0 or n1 < box.len:
        return box
    base = min(n0, float(box.len - box.growth))
    rate = (n1 - n0) / (x1 - x0)
    return dataclasses.replace(
        box, len=int(n1), growth=int(n1 - base), per_step=max(box.per_step, rate)
    )


def series_lengths(series: Dict[str, Any], axis_step: bool) -> Lengths:
    """The first and last (x, length) of each ``container:<holder>:len`` series."""
    out: Lengths = {}
    for name, s in series.items():
        holder = container_holder(name)
        if holder is None or not name.endswith(":len"):
            continue
        xs = s.step if axis_step else s.t
        pts = [(float(x), float(v)) for x, v in zip(xs, s.value) if isinstance(x, (int, float))]
        if len(pts) >= 2:
            out[holder] = (*pts[0], *pts[-1])
    return out
