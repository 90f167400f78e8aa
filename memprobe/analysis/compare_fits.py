"""The per-signal fits that ``compare`` and the reports read from a run record (pure)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Dict, Optional

from memprobe.analysis.wording import unit_of
from memprobe.record import Finding, RunRecord, Series, Signals, SignalSummary

__all__ = ["SignalFit", "signal_fits", "rate", "as_fit"]


@dataclass(frozen=True)
class SignalFit(SignalSummary):
    """One signal of one process: the record's summary of it, with its name and the
    series' peak, last and lowest value and the steps and seconds its points span (the
    summary's ``to_json`` writes none of these)."""

    signal: str = ""
    peak: Optional[float] = None
    last: Optional[float] = None
    low: Optional[float] = None
    span_steps: Optional[float] = None
    span_s: Optional[float] = None

    @staticmethod
    def of(
        summary: SignalSummary,
        signal: str,
        peak: Optional[float] = None,
        last: Optional[float] = None,
        low: Optional[float] = None,
        span_steps: Optional[float] = None,
        span_s: Optional[float] = None,
    ) -> SignalFit:
        """``summary`` as it is, with the signal's name and its series' extent."""
        own = {f.name: getattr(summary, f.name) for f in fields(SignalSummary)}
        return SignalFit(
            **own,
            signal=signal,
            peak=peak,
            last=last,
            low=low,
            span_steps=span_steps,
            span_s=span_s,
        )


def signal_fits(record: RunRecord) -> Dict[int, Dict[str, SignalFit]]:
    """Per pid and signal: the record's analysis summary (a default one where a signal has
    none), its unit where the summary lacks one, and the series' peak.

    A record without summaries (older, or written without analysis) is analysed here.
    """
    summaries = record.signals
    if not summaries and any(p.series for p in record.processes):
        summaries = _analyze(record)
    out: Dict[int, Dict[str, SignalFit]] = {}
    for p in record.processes:
        by_name = summaries.get(str(p.pid), {})
        out[p.pid] = {
            name: _fit(name, series, by_name.get(name), record.x_axis)
            for name, series in p.series.items()
        }
    return out


def _analyze(record: RunRecord) -> Signals:
    from memprobe.analysis.options import DetectOptions
    from memprobe.analysis.run import analyze  # scipy: only for records without summaries

    return analyze(record, DetectOptions()).signals


def _num(v: object) -> Optional[float]:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def _fit(name: str, series: Series, summary: Optional[SignalSummary], x_axis: str) -> SignalFit:
    values = [v for v in (_num(x) for x in series.value) if v is not None]
    s = summary if summary is not None else SignalSummary(axis=x_axis)
    unit = s.unit if s.unit in ("bytes", "count") else unit_of(name)
    steps = [float(x) for x in series.step if isinstance(x, int)]
    times = [v for v in (_num(x) for x in series.t) if v is not None]
    return SignalFit.of(
        replace(s, unit=unit, n=s.n or len(values)),
        name,
        peak=max(values) if values else None,
        last=values[-1] if values else None,
        low=min(values) if values else None,
        span_steps=max(steps) - min(steps) if steps else None,
        span_s=max(times) - min(times) if times else None,
    )


def rate(fit: Optional[SignalSummary], per: str) -> Optional[float]:
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
