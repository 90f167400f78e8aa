"""One signal of one process in bounded memory, however long the run, and the record's
series drawn from it (floors and peaks kept)."""

from __future__ import annotations

from array import array
from typing import List, Optional, Tuple

from memprobe.record import Series

MAX_POINTS = 4000  # per series in run.json; more are down-sampled keeping floor and peaks
# Memory and record size stay bounded however long the run (see SeriesBuf, CensusBuf):
BUFFER_BUCKETS = MAX_POINTS // 2  # per series held: 1000-2000 buckets, <= MAX_POINTS points

Point = Tuple[Optional[int], float, float]
_NO_STEP = -(1 << 63)  # a step of None in the step array


class SeriesBuf:
    """One signal of one process in bounded memory, however long the run.

    Points go into buckets of ``width`` consecutive samples; each closed bucket keeps its
    floor and its peak (the lowest and the highest sample, in time order: one point when
    they are the same sample). When ``cap`` buckets are closed, neighbours merge pairwise
    (keeping the floor and peak of the pair) and ``width`` doubles: at most ``2 * cap``
    points are held, spread evenly over the whole run, and the run's floors and peaks are
    never lost. ``cap=None`` keeps every point (a rebuild at full resolution).

    Compact arrays, not lists of floats: ~24 bytes a kept point.
    """

    __slots__ = ("cap", "width", "n", "first", "last", "_step", "_t", "_v", "_sizes", "_open")

    def __init__(self, cap: Optional[int] = BUFFER_BUCKETS) -> None:
        self.cap = None if cap is None else max(2, cap + (cap % 2))  # even: pairs merge evenly
        self.width = 1
        self.n = 0  # samples seen
        self.first: Optional[Point] = None
        self.last: Optional[Point] = None
        self._step = array("q")
        self._t = array("d")
        self._v = array("d")
        self._sizes = array("B")  # kept points per closed bucket (1 or 2)
        # the open bucket: (samples in it, floor point, peak point, floor first?)
        self._open: Optional[Tuple[int, Point, Point, bool]] = None

    def __len__(self) -> int:
        return self.n

    def add(self, step: Optional[int], t: float, value: float) -> None:
        if step is not None and not (_NO_STEP < step < (1 << 63)):
            step = None  # nothing a real step counter reaches; the array cannot hold it
        pt: Point = (step, t, value)
        if self.first is None:
            self.first = pt
        self.last = pt
        self.n += 1
        if self.cap is None:
            self._keep(pt)
            return
        if self._open is None:
            self._open = (1, pt, pt, True)
        else:
            k, lo, hi, lo_first = self._open
            if value < lo[2]:
                lo, lo_first = pt, False
            elif value > hi[2]:
                hi, lo_first = pt, True
            self._open = (k + 1, lo, hi, lo_first)
        if self._open[0] >= self.width:
            _, lo, hi, lo_first = self._open
            self._open = None
            pair = (lo,) if lo is hi else ((lo, hi) if lo_first else (hi, lo))
            for q in pair:
                self._keep(q)
            self._sizes.append(len(pair))
            if len(self._sizes) >= self.cap:
                self._merge_pairs()

    def _keep(self, pt: Point) -> None:
        self._step.append(_NO_STEP if pt[0] is None else pt[0])
        self._t.append(pt[1])
        self._v.append(pt[2])

    def _merge_pairs(self) -> None:
        """Halve the closed buckets: each pair keeps its floor and peak, in time order."""
        step, t, v = self._step, self._t, self._v
        ns, nt, nv, sizes = array("q"), array("d"), array("d"), array("B")
        i = 0
        n_buckets = len(self._sizes)
        for b in range(0, n_buckets, 2):
            k = self._sizes[b] + (self._sizes[b + 1] if b + 1 < n_buckets else 0)
            lo = hi = i
            for j in range(i + 1, i + k):
                if v[j] < v[lo]:
                    lo = j
                elif v[j] > v[hi]:
                    hi = j
            keep = (lo,) if lo == hi else (min(lo, hi), max(lo, hi))
            for j in keep:
                ns.append(step[j])
                nt.append(t[j])
                nv.append(v[j])
            sizes.append(len(keep))
            i += k
        self._step, self._t, self._v, self._sizes = ns, nt, nv, sizes
        self.width *= 2

    def points(self) -> Tuple[List[Optional[int]], List[float], List[float]]:
        """(steps, times, values) of every kept point, the open bucket's included."""
        steps: List[Optional[int]] = [None if s == _NO_STEP else s for s in self._step]
        ts, vs = self._t.tolist(), self._v.tolist()
        if self._open is not None:
            _, lo, hi, lo_first = self._open
            for q in (lo,) if lo is hi else ((lo, hi) if lo_first else (hi, lo)):
                steps.append(q[0])
                ts.append(q[1])
                vs.append(q[2])
        return steps, ts, vs

    def values(self) -> List[float]:
        """The kept values in time order (a chart of the whole run)."""
        return self.points()[2]

    # the lists as the record has them (read-only views, built on demand)
    @property
    def step(self) -> List[Optional[int]]:
        return self.points()[0]

    @property
    def t(self) -> List[float]:
        return self.points()[1]

    @property
    def value(self) -> List[float]:
        return self.points()[2]

    def series(self, max_points: Optional[int] = MAX_POINTS, compact: bool = True) -> Series:
        """The record's series: at most ``max_points`` points (None: every kept point), the
        floor and peak of each bucket. ``compact``: times to the millisecond, whole numbers
        as integers (a smaller run.json, the same values; the live judge skips it)."""
        steps, ts, vs = self.points()
        if max_points is not None and len(vs) > max_points:
            steps, ts, vs = _downsample(steps, ts, vs, max_points)
        if not compact:
            return Series(step=steps, t=ts, value=vs)
        return Series(
            step=steps,
            t=[round(x, 3) for x in ts],
            value=[int(x) if x.is_integer() and abs(x) < 2**53 else x for x in vs],
        )


def _downsample(
    steps: List[Optional[int]], ts: List[float], vs: List[float], max_points: int
) -> Tuple[List[Optional[int]], List[float], List[float]]:
    """Keep at most max_points, keeping each bucket's floor and peak in time order."""
    n = len(vs)
    if n <= max_points:
        return steps, ts, vs
    buckets = max_points // 2
    keep: List[int] = []
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        if hi <= lo:
            continue
        seg = range(lo, hi)
        i_min = min(seg, key=vs.__getitem__)
        i_max = max(seg, key=vs.__getitem__)
        keep.extend(sorted({i_min, i_max}))
    return [steps[i] for i in keep], [ts[i] for i in keep], [vs[i] for i in keep]
