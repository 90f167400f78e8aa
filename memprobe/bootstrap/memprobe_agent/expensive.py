"""Expensive collectors (object census, autograd graphs, holders, tracemalloc window).

Scheduled on an overhead budget. ``next_due`` is the monotonic time at or after
which the agent calls ``on_step`` (at a step boundary) or ``on_tick`` (from the
background thread when no steps come).
"""

from __future__ import annotations

from typing import Any


class Expensive:
    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.next_due = float("inf")  # nothing scheduled until the census lands

    def on_step(self, step: int, now: float) -> None:
        pass

    def on_tick(self, now: float) -> None:
        pass
