"""The data behind the HTML pages: plain dicts of cleaned strings and numbers."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from memprobe.analysis.compare import RunDiff, SignalDiff, SignalFit, signal_fits
from memprobe.record import Finding, Process, RunRecord
from memprobe.render import _common as c
from memprobe.render._text import clean, fmt_duration, fmt_pct, fmt_rate, fmt_value

__all__ = ["report_payload", "diff_payload", "chart_payload"]

MAX_POINTS = 4000


def _decimate(xs: List[float], ys: List[Optional[float]]) -> List[int]:
    """Indices to keep: all, or per bucket the first point plus its min and max."""
    n = len(xs)
    if n <= MAX_POINTS:
        return list(range(n))
    buckets = MAX_POINTS // 3
    keep = set()
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        idx = [i for i in range(lo, hi) if ys[i] is not None]
        keep.add(lo)
        if idx:
            keep.add(min(idx, key=lambda i: ys[i] or 0.0))
            keep.add(max(idx, key=lambda i: ys[i] or 0.0))
    keep.add(n - 1)
    return sorted(keep)


def _num(v: Any) -> Optional[float]:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok else None


def chart_payload(p: Process, name: str, fit: SignalFit, record: RunRecord) -> Dict[str, Any]:
    xs, ys, axis = c.fit_points(p.series[name], fit, p)
    keep = _decimate(xs, ys)
    xs, ys = [xs[i] for i in keep], [ys[i] for i in keep]
    slope = fit.slope_per_step if axis == "step" else fit.slope_per_s
    fit_y: Optional[List[Optional[float]]] = None
    on_axis = (axis == "step") == (fit.per == "step")
    if slope is not None and fit.intercept is not None and on_axis:
        x0 = fit.x0 if fit.x0 is not None else (xs[0] if xs else 0.0)
        start = fit.warmup_end_x if fit.warmup_end_x is not None else x0
        end = fit.x_end if fit.x_end is not None else math.inf
        fit_y = [fit.intercept + slope * (x - x0) if start <= x <= end else None for x in xs]
    limit = None
    for f in record.findings:
        if f.pid == p.pid and f.signal == name and f.projected_oom:
            proj = f.projected_oom
            at = _num(proj.get("step") if axis == "step" else proj.get("t_s"))
            value = _num(proj.get("limit_bytes"))
            if value is not None:
                limit = {"value": value, "x": at, "text": c.projection_text(f) or ""}
    return {
        "name": clean(name, 120),
        "unit": fit.unit,
        "axis": axis,
        "x": xs,
        "y": ys,
        "fit": fit_y,
        "slope": slope,
        "verdict": fit.verdict,
        "verdict_text": c.verdict_word(fit.verdict)
        + (f" ({fmt_pct(fit.confidence)})" if fit.verdict in ("leak", "no_leak") else ""),
        "rate_text": fmt_rate(fit.slope_per_step, fit.slope_per_s, fit.unit),
        "peak_text": c.peak_text(fit),
        "warmup_end_x": fit.warmup_end_x,
        "warmup_text": c.warmup_text(fit),
        "reason": clean(fit.reason, 300),
        "limit": limit,
        "marks": [
            {"x": c.mark_x(m, axis), "label": clean(m.label, 60)}
            for m in record.marks[: c.MAX_MARKS_SHOWN * 4]
            if m.pid in (p.pid, None)
        ],
    }


def finding_payload(f: Finding, record: RunRecord) -> Dict[str, Any]:
    chain = f.evidence.get("chain")
    return {
        "verdict": f.verdict,
        "kind": clean(f.kind, 40),
        "title": c.finding_title(f, record),
        "explanation": clean(f.explanation, 600),
        "rows": [[k, v] for k, v in c.finding_rows(f, record.cwd) if k != "chain"],
        "chain": [clean(x, 200) for x in chain[:30]] if isinstance(chain, list) else [],
    }


def report_payload(record: RunRecord) -> Dict[str, Any]:
    fits = signal_fits(record)
    conf = c.run_confidence(record, fits)
    procs = []
    for p in record.processes:
        pf = fits.get(p.pid, {})
        procs.append(
            {
                "title": c.process_title(p),
                "subtitle": f"{p.steps:,} steps" + ("" if p.has_agent else ", no agent"),
                "argv": clean(" ".join(p.argv), 400),
                "charts": [
                    chart_payload(p, n, f, record)
                    for n, f in sorted(pf.items(), key=lambda kv: c.row_rank(kv[1]))
                ],
            }
        )
    return {
        "kind": "report",
        "title": "memprobe report",
        "verdict": record.verdict,
        "verdict_text": c.verdict_word(record.verdict).upper()
        + (f" — confidence {fmt_pct(conf)}" if conf is not None else ""),
        "meta": [
            ["command", clean(" ".join(record.command), 400)],
            ["cwd", clean(record.cwd, 300)],
            [
                "run",
                f"{fmt_duration(record.duration_s)}, {c.max_steps(record):,} steps, "
                f"{c.exit_text(record)}",
            ],
            ["limits", c.limits_text(record)],
            *([["marks", c.marks_text(record.marks)]] if record.marks else []),
            ["schema", clean(record.schema, 60)],
        ],
        "findings": [finding_payload(f, record) for f in record.findings],
        "processes": procs,
        "events": [
            [f"{e.t:.1f} s", f"{clean(e.kind, 40)} (pid {e.pid}): {clean(e.message)}"]
            for e in record.events[:50]
        ],
    }


def rate_text(rate: Optional[float], per: str, unit: str) -> str:
    return fmt_rate(rate, None, unit) if per == "step" else fmt_rate(None, rate, unit)


def _series_xy(p: Optional[Process], name: str, x_axis: str) -> Optional[Dict[str, Any]]:
    if p is None or name not in p.series:
        return None
    series = c.stepped(p.series[name], p) if x_axis == "step" else p.series[name]
    xs, ys, axis = c.points(series, x_axis)
    keep = _decimate(xs, ys)
    return {"x": [xs[i] for i in keep], "y": [ys[i] for i in keep], "axis": axis}


def signal_row(s: SignalDiff) -> Dict[str, Any]:
    def peak(fit: Optional[SignalFit]) -> str:
        return fmt_value(fit.peak, s.unit) if fit is not None else "–"

    def verdict(fit: Optional[SignalFit]) -> str:
        return c.verdict_word(fit.verdict) if fit is not None else "absent"

    return {
        "process": clean(s.process, 60),
        "signal": clean(s.signal, 120),
        "status": s.status,
        "cells": [
            clean(s.process, 60),
            clean(s.signal, 120),
            s.status.replace("_", " "),
            verdict(s.before),
            verdict(s.after),
            rate_text(s.rate_before, s.per, s.unit),
            rate_text(s.rate_after, s.per, s.unit),
            peak(s.before),
            peak(s.after),
            clean(s.note, 200),
        ],
    }


def diff_payload(diff: RunDiff) -> Dict[str, Any]:
    from memprobe.analysis.compare import EXIT_BAD_INPUT, EXIT_REGRESSION

    code = diff.exit_code
    verdict = {EXIT_REGRESSION: "leak", EXIT_BAD_INPUT: "inconclusive"}.get(code, "no_leak")
    bad = diff.regressions
    verdict_text = {
        EXIT_REGRESSION: f"REGRESSION — {len(bad)} new or worse leak(s): "
        + "; ".join(clean(b, 120) for b in bad[:5]),
        EXIT_BAD_INPUT: "NOTHING COMPARABLE",
    }.get(code, "NO REGRESSION")
    procs = []
    for m in diff.processes:
        charts = []
        for s in (s for s in diff.signals if s.process == m.label):
            b = _series_xy(m.before, s.signal, diff.before.x_axis)
            a = _series_xy(m.after, s.signal, diff.after.x_axis)
            axis = (a or b or {}).get("axis", "s")
            if a and b and a["axis"] != b["axis"]:
                b = _series_xy(m.before, s.signal, "time")
                a = _series_xy(m.after, s.signal, "time")
                axis = "s"
            charts.append(
                {
                    "name": clean(s.signal, 120),
                    "unit": s.unit,
                    "axis": axis,
                    "status": s.status,
                    "before": b,
                    "after": a,
                    "verdict": {"fixed": "no_leak", "new": "leak", "regressed": "leak"}.get(
                        s.status
                    ),
                    "verdict_text": s.status.replace("_", " "),
                }
            )
        procs.append(
            {"title": clean(m.label, 60), "subtitle": f"matched by {m.how}", "charts": charts}
        )
    findings = [
        {
            "cells": [
                clean(f.process, 60),
                clean(f.signal, 120),
                f.status.replace("_", " "),
                clean(f.culprit_type or "–", 200),
                clean(f.holder or "–", 300),
                rate_text(_frate(f.before, f.per), f.per, _funit(f.before, f.after)),
                rate_text(_frate(f.after, f.per), f.per, _funit(f.before, f.after)),
            ],
            "status": f.status,
        }
        for f in diff.findings
    ]
    return {
        "kind": "diff",
        "title": "memprobe diff",
        "verdict": verdict,
        "verdict_text": verdict_text,
        "meta": [
            ["before", clean(" ".join(diff.before.command), 300)],
            ["after", clean(" ".join(diff.after.command), 300)],
            [
                "verdicts",
                f"{c.verdict_word(diff.before.verdict)} → {c.verdict_word(diff.after.verdict)}",
            ],
            ["rates", "per step" if diff.per == "step" else "per minute (time axis)"],
        ],
        "notes": [clean(n, 400) for n in diff.notes],
        "signal_columns": [
            "process",
            "signal",
            "status",
            "before",
            "after",
            "rate before",
            "rate after",
            "peak before",
            "peak after",
            "note",
        ],
        "signal_rows": [signal_row(s) for s in diff.signals],
        "finding_columns": [
            "process",
            "signal",
            "status",
            "type",
            "holder",
            "rate before",
            "rate after",
        ],
        "finding_rows": findings,
        "processes": procs,
    }


def _frate(f: Optional[Finding], per: str) -> Optional[float]:
    if f is None:
        return None
    return f.slope_per_step if per == "step" else f.slope_per_s


def _funit(*fs: Optional[Finding]) -> str:
    return next((f.unit for f in fs if f is not None), "bytes")
