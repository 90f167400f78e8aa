"""What the parent holds of one process: its header, series, censuses, steps, parent."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, List, Optional, Tuple

from memprobe.bootstrap.memprobe_agent import wire
from memprobe.collect.censusbuf import CensusBuf
from memprobe.collect.seriesbuf import BUFFER_BUCKETS, SeriesBuf

GONE_AFTER_S = 1.5  # a process the outside sampler has not seen for this long has ended


@dataclass
class ProcState:
    pid: int
    header: Dict[str, Any] = field(default_factory=dict)
    series: Dict[str, SeriesBuf] = field(default_factory=dict)
    census: CensusBuf = field(default_factory=CensusBuf)
    steps: int = 0
    last_t: float = 0.0
    first_t: Optional[float] = None
    exited: bool = False
    worker_id: Optional[int] = None
    has_agent: bool = False
    ppid: Optional[int] = None
    mp_name: Optional[str] = None  # multiprocessing's name for it ("SpawnPoolWorker-2")
    program: Optional[List[str]] = None  # argv seen from outside (non-Python children)
    last_outside_t: Optional[float] = None
    outside_rss: SeriesBuf = field(default_factory=SeriesBuf)
    bucket_cap: Optional[int] = BUFFER_BUCKETS  # per new series; None keeps every point
    # (t, step) of step-tagged RSS samples >= 0.25 s apart (10 s of them), and the latest: the
    # step rate of the last seconds without looking through the series
    step_marks: Deque[Tuple[float, int]] = field(default_factory=lambda: deque(maxlen=40))
    last_mark: Optional[Tuple[float, int]] = None

    def rss(self) -> SeriesBuf:
        """The agent's RSS series, or the parent's outside view for processes without one."""
        return self.series.get(wire.RSS) or self.outside_rss

    def step_rate(self, window_s: float = 5.0) -> Optional[float]:
        """Steps per second from the newest mark at least ``window_s`` before the latest
        step-tagged sample (or the oldest mark of a shorter run) to that sample."""
        if self.last_mark is None or not self.step_marks:
            return None
        t_end, s_end = self.last_mark
        t_start, s_start = next(
            ((t, s) for t, s in reversed(self.step_marks) if t_end - t >= window_s),
            self.step_marks[0],
        )
        if t_end <= t_start:
            return None
        return (s_end - s_start) / (t_end - t_start)

    def add(self, name: str, step: Optional[int], t: float, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return
        if value != value or value in (float("inf"), float("-inf")):
            return
        buf = self.series.get(name)
        if buf is None:
            buf = self.series[name] = SeriesBuf(self.bucket_cap)
        buf.add(step, t, float(value))
        if name == wire.RSS and step is not None:
            self.last_mark = (t, step)
            if not self.step_marks or t - self.step_marks[-1][0] >= 0.25:
                self.step_marks.append((t, step))
        self.last_t = max(self.last_t, t)
        if self.first_t is None or t < self.first_t:
            self.first_t = t


def all_series(p: ProcState) -> Dict[str, SeriesBuf]:
    """The agent's series, plus the outside RSS for a process that has no agent."""
    if wire.RSS in p.series or not p.outside_rss.n:
        return p.series
    return {**p.series, wire.RSS: p.outside_rss}
