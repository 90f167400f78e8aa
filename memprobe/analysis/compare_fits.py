"""The per-signal fits that ``compare`` and the reports read from a run record (pure)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Optional

from memprobe.analysis.series import unit_of
from memprobe.record import Finding, RunRecord, Series

__all__ = ["SignalFit", "signal_fits", "rate", "as_fit"]


@dataclass(frozen=True)
class SignalFit:
    """One signal of one process as the analysis judged it, plus its peak.

    ``ci_low``/``ci_high`` bound the slope per unit of ``per`` (``"step"`` or
    ``"s"``); the fitted line is ``intercept + slope * (x - x0)`` from ``x0``
    (the end of the warm-up) to ``x_end``.
    """

    signal: str
    unit: str
    verdict: Optional[str] = None  # None: no analysis in the record
    slope_per_step: Optional[float] = None
    slope_per_s: Optional[float] = None
    ci_low: Optional[float] = None
    ci_high: Optional[float] = None
    per: str = "step"
    confidence: float = 0.0
    warmup_end_x: Optional[float] = None
    x0: Optional[float] = None
    x_end: Optional[float] = None
    intercept: Optional[float] = None
    n: int = 0
    peak: Optional[float] = None
    last: Optional[float] = None
    reason: str = ""
    needed: Optional[str] = None

    @property
    def slope(self) -> Optional[float]:
        """The slope on the fit's own axis."""
        return self.slope_per_step if self.per == "step" else self.slope_per_s


def signal_fits(record: RunRecord) -> Dict[int, Dict[str, SignalFit]]:
    """Per pid and signal: the record's analysis summary (tolerating gaps) and peak.

    A record without summaries (older, or written without analysis) is analysed here.
    """
    raw_all = record.signals if isinstance(record.signals, dict) else {}
    if not raw_all and any(p.series for p in record.processes):
        raw_all = _analyze(record)
    out: Dict[int, Dict[str, SignalFit]] = {}
    for p in record.processes:
        raw_p = raw_all.get(str(p.pid))
        raw_p = raw_p if isinstance(raw_p, dict) else {}
        out[p.pid] = {
            name: _fit(name, series, raw_p.get(name), record.x_axis)
            for name, series in p.series.items()
        }
    return out


def _analyze(record: RunRecord) -> Dict[str, Any]:
    from memprobe.analysis.options import DetectOptions
    from memprobe.analysis.run import analyze  # scipy: only for records without summaries

    return analyze(record, DetectOptions()).signals


def _num(v: object) -> Optional[float]:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def _fit(name: str, series: Series, raw: object, x_axis: str) -> SignalFit:
    values = [v for v in (_num(x) for x in series.value) if v is not None]
    d = raw if isinstance(raw, dict) else {}
    verdict, unit, axis = d.get("verdict"), d.get("unit"), d.get("axis", x_axis)
    needed = d.get("needed")
    return SignalFit(
        signal=name,
        unit=unit if unit in ("bytes", "count") else unit_of(name),
        verdict=str(verdict) if isinstance(verdict, str) else None,
        slope_per_step=_num(d.get("slope_per_step")),
        slope_per_s=_num(d.get("slope_per_s")),
        ci_low=_num(d.get("ci_low")),
        ci_high=_num(d.get("ci_high")),
        per="step" if axis == "step" else "s",
        confidence=_num(d.get("confidence")) or 0.0,
        warmup_end_x=_num(d.get("warmup_end_x")),
        x0=_num(d.get("x0")),
        x_end=_num(d.get("x_end")),
        intercept=_num(d.get("intercept")),
        n=int(_num(d.get("n")) or len(values)),
        peak=max(values) if values else None,
        last=values[-1] if values else None,
        reason=str(d.get("reason") or ""),
        needed=str(needed) if isinstance(needed, str) else None,
    )


def rate(fit: Optional[SignalFit], per: str) -> Optional[float]:
    if fit is None:
        return None
    return fit.slope_per_step if per == "step" else fit.slope_per_s


def as_fit(f: Finding) -> SignalFit:
    return SignalFit(
        signal=f.signal,
        unit=f.unit,
        verdict=f.verdict,
        slope_per_step=f.slope_per_step,
        slope_per_s=f.slope_per_s,
        confidence=f.confidence,
    )
