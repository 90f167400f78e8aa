"""From a recorded series to clean arrays: x-axis choice, units, families, reduction."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np
import numpy.typing as npt

from memprobe.analysis.wording import unit_of
from memprobe.record import Series

Array = npt.NDArray[np.float64]

# Counts of heavy things: one more per step is a leak on its own.
_OBJECT_PREFIXES = ("tensors:", "graph:", "modules:", "figures:", "ndarray:", "gc:frozen")
BLOCKS = "py_alloc_blocks"
TREE_USS = "tree:uss_bytes"  # the summed USS of a run's processes alive at each time (tree.py)


def container_holder(signal: str) -> Optional[str]:
    """The holder of a watched container's signal (``container:<holder>:len`` ->
    ``<holder>``), None for any other signal."""
    if not signal.startswith("container:"):
        return None
    return signal[len("container:") :].rsplit(":", 1)[0]


def family_of(signal: str) -> str:
    """How a signal is weighed in the run verdict.

    - ``memory``: bytes the process holds (RSS, USS, CUDA allocated, tensor bytes);
    - ``object``: counts of heavy things (tensors, graph nodes, modules, figures, arrays);
    - ``heap``: Python-heap counts (``py_alloc_blocks``, ``gc_tracked_objects``,
      ``objects:*``, ``container:*:len``) and any other count: they wobble with
      cyclic garbage and caches, and one more small object per step may be
      negligible, so their leaks need another signal's backing;
    - ``allocator``: CUDA reserved, cached-free (reserved − allocated) and inactive split
      bytes: the caching allocator's own, judged against allocated;
    - ``peak``: a high-water mark (``max_*``), growing by construction.
    """
    base = signal.rsplit("/", 1)[-1]
    if base.startswith("max_") or ":max_" in signal:
        return "peak"
    if signal.startswith("cuda:") and base.startswith(("reserved", "inactive", "cached_free")):
        return "allocator"
    if unit_of(signal) == "bytes":
        return "memory"
    if signal.startswith(_OBJECT_PREFIXES):
        return "object"
    return "heap"


@dataclass(frozen=True)
class Prepared:
    """A series ready for the estimators: finite values sorted by x.

    ``axis`` is ``"step"`` (x = optimizer steps; samples without a step are
    dropped) or ``"time"`` (x = seconds since the process started).
    """

    x: Array
    y: Array
    t: Array
    axis: str


def prepare(series: Series, axis: Optional[str] = None) -> Prepared:
    """Choose the x-axis and clean a series.

    With ``axis=None`` steps are used when at least three samples carry one.
    Several samples at one step keep the lowest value: a step-boundary sample
    sees less transient memory than one taken mid-step.
    """
    n = min(len(series.step), len(series.t), len(series.value))
    steps = [series.step[i] for i in range(n)]
    with_step = sum(1 for s in steps if s is not None)
    if axis is None:
        axis = "step" if with_step >= 3 else "time"
    xs: list[float] = []
    ys: list[float] = []
    ts: list[float] = []
    for i in range(n):
        v, t = series.value[i], series.t[i]
        if not _finite(v) or not _finite(t):
            continue
        if axis == "step":
            s = steps[i]
            if s is None:
                continue
            xs.append(float(s))
        else:
            xs.append(float(t))
        ys.append(float(v))
        ts.append(float(t))
    x, y, tt = np.asarray(xs), np.asarray(ys), np.asarray(ts)
    order = np.argsort(x, kind="stable")
    x, y, tt = x[order], y[order], tt[order]
    if len(x) > 1 and np.any(np.diff(x) == 0):
        x, y, tt = _min_per_x(x, y, tt)
    return Prepared(x=x, y=y, t=tt, axis=axis)


def _finite(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _min_per_x(x: Array, y: Array, t: Array) -> tuple[Array, Array, Array]:
    ux, start = np.unique(x, return_index=True)
    ymin = np.minimum.reduceat(y, start)
    return ux, ymin, t[start]


def step_clock(series: Dict[str, Series]) -> Optional[tuple[Array, Array]]:
    """(t, step) of the series with the most step-tagged samples, or None."""
    best: Optional[Series] = None
    best_n = 2
    for s in series.values():
        n = sum(1 for st in s.step if st is not None)
        if n > best_n:
            best, best_n = s, n
    if best is None:
        return None
    pairs = sorted(
        (float(t), float(st)) for st, t in zip(best.step, best.t) if st is not None and _finite(t)
    )
    t = np.asarray([p[0] for p in pairs])
    st = np.maximum.accumulate(np.asarray([p[1] for p in pairs]))
    return t, st


def with_steps(series: Series, clock: tuple[Array, Array]) -> Series:
    """Give samples taken on time (outside sampling: USS, PSS) the step the process
    was at, interpolated from its own step-tagged samples; samples outside the
    stepped part of the run keep None."""
    t_ref, st_ref = clock
    steps: List[Optional[int]] = []
    for st, t in zip(series.step, series.t):
        if st is None and _finite(t) and t_ref[0] <= t <= t_ref[-1]:
            steps.append(int(round(float(np.interp(t, t_ref, st_ref)))))
        else:
            steps.append(st)
    return Series(step=steps, t=list(series.t), value=list(series.value))


def steps_per_second(x: Array, t: Array) -> Optional[float]:
    """The observed step rate over a step-axis window, None when it cannot be told."""
    if len(x) < 2:
        return None
    dt = float(t[-1] - t[0])
    dx = float(x[-1] - x[0])
    if dt <= 0 or dx <= 0:
        return None
    return dx / dt


def reduce_points(x: Array, y: Array, max_points: int) -> tuple[Array, Array]:
    """Block medians, so that estimators see at most ``max_points`` points.

    Medians keep a linear trend linear and drop isolated spikes; sampling is
    already even in x (step-aligned), so equal-count blocks are equal-width.
    """
    n = len(x)
    if n <= max_points:
        return x, y
    block = int(math.ceil(n / max_points))
    m = n // block
    xb = np.median(x[: m * block].reshape(m, block), axis=1)
    yb = np.median(y[: m * block].reshape(m, block), axis=1)
    if n > m * block:
        xb = np.append(xb, np.median(x[m * block :]))
        yb = np.append(yb, np.median(y[m * block :]))
    return xb, yb


def as_array(values: Sequence[float] | Array) -> Array:
    return np.asarray(values, dtype=np.float64)
