"""One signal's verdict as the record keeps it (``RunRecord.signals[pid][signal]``): the
analysis writes it (``SignalVerdict.summary()``), ``report`` and ``diff`` read it."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Dict, Optional

from memprobe.record.fields import JSONValue

__all__ = ["SignalSummary", "Signals"]


@dataclass(frozen=True)
class SignalSummary:
    """The verdict on one signal and the fit behind it.

    ``slope_per_step`` / ``slope_per_s`` are the rate per step and per second (either may
    be unknown); ``ci_low`` / ``ci_high`` bound the slope per unit of ``axis`` (``per``).
    The fitted line is ``intercept + slope * (x - x0)``, drawn from ``x0`` (the end of the
    warm-up) to ``x_end``. ``verdict`` None: not analysed.
    """

    verdict: Optional[str] = None
    slope_per_step: Optional[float] = None
    slope_per_s: Optional[float] = None
    ci_low: Optional[float] = None
    ci_high: Optional[float] = None
    confidence: float = 0.0
    warmup_end_x: Optional[float] = None
    n: int = 0
    unit: str = ""
    axis: str = "step"  # "step" | "time": the x-axis the fit was made on
    family: str = ""
    x0: Optional[float] = None
    x_end: Optional[float] = None
    intercept: Optional[float] = None
    reason: str = ""
    needed: Optional[str] = None  # what would settle an inconclusive verdict
    floor: bool = False  # judged on the floor of a sawtooth
    plateau: bool = False  # grew, then stopped

    @property
    def per(self) -> str:
        """The unit of ``slope``, ``ci_low`` and ``ci_high``: ``"step"`` or ``"s"``."""
        return "step" if self.axis == "step" else "s"

    @property
    def slope(self) -> Optional[float]:
        """The slope on the fit's own axis."""
        return self.slope_per_step if self.per == "step" else self.slope_per_s

    def to_json(self) -> Dict[str, JSONValue]:
        """The summary as ``run.json`` keeps it: every field, by its name, in field order
        (only ``SignalSummary``'s own fields, for a subclass too)."""
        return {f.name: getattr(self, f.name) for f in fields(SignalSummary)}

    @staticmethod
    def from_json(d: object, axis: str = "step") -> SignalSummary:
        """The summary in ``d``, whatever it holds: a key that is missing or of the wrong
        type (a number that is not finite, a verdict that is not text, ``d`` not an object
        at all) reads as its default. ``axis``: the default x-axis (the record's), for
        records written before summaries named theirs."""
        g = d if isinstance(d, dict) else {}
        verdict, needed, unit, family = (g.get(k) for k in ("verdict", "needed", "unit", "family"))
        axis_v, reason = g.get("axis"), g.get("reason")
        n = _finite(g.get("n"))
        return SignalSummary(
            verdict=verdict if isinstance(verdict, str) else None,
            slope_per_step=_finite(g.get("slope_per_step")),
            slope_per_s=_finite(g.get("slope_per_s")),
            ci_low=_finite(g.get("ci_low")),
            ci_high=_finite(g.get("ci_high")),
            confidence=_finite(g.get("confidence")) or 0.0,
            warmup_end_x=_finite(g.get("warmup_end_x")),
            n=int(n) if n is not None else 0,
            unit=unit if isinstance(unit, str) else "",
            axis=axis_v if isinstance(axis_v, str) else axis,
            family=family if isinstance(family, str) else "",
            x0=_finite(g.get("x0")),
            x_end=_finite(g.get("x_end")),
            intercept=_finite(g.get("intercept")),
            reason=str(reason) if reason else "",
            needed=needed if isinstance(needed, str) else None,
            floor=g.get("floor") is True,
            plateau=g.get("plateau") is True,
        )


#: ``{"<pid>": {"<signal>": SignalSummary}}``
Signals = Dict[str, Dict[str, SignalSummary]]


def _finite(v: object) -> Optional[float]:
    """A finite number as float; anything else (text, booleans, NaN, infinity, an int too
    big for a float) as None."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None
