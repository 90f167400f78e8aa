"""The overhead budget: expensive collectors pay for their measured cost in wall time.

A token bucket: wall time earns credit at ``rate`` seconds per second from the
moment the agent starts (so a long import earns the first census), a
collector spends what it measured, and it may run only when the credit covers
its last cost. The bucket holds at most a few runs' worth, so an idle stretch
never buys a burst. ``rate`` is the configured budget (default 3 %) while the
run is young and the detector most needs points, then a quarter of it: over a
long run the spend converges to under 1 %, and the budget stays a ceiling
that one badly measured run cannot push through. A collector forced to run on no
credit (the fixed-step censuses) leaves at most one run's cost of debt.
"""

from __future__ import annotations

from typing import Dict


class Budget:
    def __init__(
        self,
        fraction: float,
        t0: float,
        early_s: float = 20.0,
        steady_ratio: float = 0.25,
        min_gap_s: float = 0.2,
        burst_runs: float = 2.0,
    ) -> None:
        self.fraction = max(0.0, float(fraction))
        self.t0 = t0
        self.early_s = early_s
        self.steady_ratio = steady_ratio
        self.min_gap_s = min_gap_s
        self.burst_runs = burst_runs
        self.credit = 0.0
        self.updated = t0
        self.spent: Dict[str, float] = {}
        self.runs: Dict[str, int] = {}

    def rate(self, now: float) -> float:
        """The share of wall time collectors may use at this moment of the run."""
        if now - self.t0 < self.early_s:
            return self.fraction
        return self.fraction * self.steady_ratio

    def _earn(self, now: float, cap: float) -> None:
        if now > self.updated:
            earned = (now - self.updated) * self.rate(now)
            self.credit = min(max(cap, self.credit), self.credit + earned)
            self.updated = now

    def allows(self, now: float, cost: float) -> bool:
        """True when the credit earned so far covers a run costing ``cost`` seconds."""
        self._earn(now, self.burst_runs * cost)
        return self.credit >= cost

    def charge(self, name: str, seconds: float, now: float) -> None:
        seconds = max(0.0, seconds)
        self._earn(now, self.burst_runs * seconds)
        # at most one run in arrears: the censuses forced whatever the budget (a short run's
        # first looks) must not silence the collector for the rest of a short run
        self.credit = max(self.credit - seconds, -seconds)
        self.spent[name] = self.spent.get(name, 0.0) + seconds
        self.runs[name] = self.runs.get(name, 0) + 1

    def next_after(self, now: float, cost: float) -> float:
        """The earliest time a collector costing ``cost`` seconds is affordable again."""
        self._earn(now, self.burst_runs * cost)
        rate = self.rate(now)
        if rate <= 0:
            return float("inf")
        return now + max(self.min_gap_s, (cost - self.credit) / rate)

    def total(self) -> float:
        return sum(self.spent.values())

    def summary(self, now: float) -> Dict[str, float]:
        """Seconds spent per collector and the share of wall time, for the census payload."""
        out = {f"{k}_s": round(v, 4) for k, v in self.spent.items()}
        out["share"] = round(self.total() / max(1e-9, now - self.t0), 5)
        return out


BACKGROUND_STRETCH = 4.0  # wall over CPU of a census on a loaded machine (censustaker.py)


def target_cost(wall: float, cpu: float, main_thread: bool) -> float:
    """What a census cost the program: its wall time in the main thread (the program
    waited for all of it); in the agent's own thread only while it held the GIL, which is
    its CPU stretched by a loaded machine (``BACKGROUND_STRETCH``), never the time it
    waited for the GIL (gilshare.py: seconds, for milliseconds of work)."""
    return wall if main_thread else min(wall, cpu * BACKGROUND_STRETCH)
