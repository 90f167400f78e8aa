"""Self-contained, offline HTML for a run report and a run diff.

The page is one file: the vendored uPlot (MIT, see ``vendor/README.md``), our
own script and style, and the data. Data goes in as JSON inside a
``<script type="application/json">`` element with ``<``, ``>``, ``&`` and the
JavaScript line separators written as ``\\uXXXX`` escapes, so no target string
can close the element; the page script inserts every string with
``textContent``. A Content-Security-Policy allows only the page's own two
scripts (by hash), so injected markup could not run script even if it slipped
through.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from importlib import resources
from typing import Any, Dict, List, Optional

from memprobe.analysis.compare import RunDiff, SignalFit, signal_fits
from memprobe.record import Process, RunRecord
from memprobe.render import _common as c
from memprobe.render._html_diff import diff_payload
from memprobe.render._text import clean, fmt_duration, fmt_pct, fmt_rate

__all__ = ["report_html", "diff_html", "json_for_script"]

MAX_POINTS = 4000


def _asset(*parts: str) -> str:
    return resources.files("memprobe.render").joinpath(*parts).read_text(encoding="utf-8")


def json_for_script(data: Any) -> str:
    """JSON that is safe inside a <script> element (no way to close it or open a comment)."""
    s = json.dumps(c.json_safe(data), ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _csp_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _page(title: str, payload: Dict[str, Any]) -> str:
    uplot_js = _asset("vendor", "uPlot.iife.min.js")
    page_js = _asset("assets", "report.js")
    css = _asset("vendor", "uPlot.min.css") + "\n" + _asset("assets", "report.css")
    for code in (uplot_js, page_js):  # our inlining must not be closable from inside
        if "</script" in code.lower() or "<!--" in code:
            raise ValueError("an inlined script contains '</script' or '<!--'")
    csp = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src {_csp_hash(uplot_js)} {_csp_hash(page_js)}"
    )
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{html.escape(csp)}\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{html.escape(clean(title, 200))}</title>\n"
        f"<style>\n{css}\n</style>\n</head>\n<body>\n"
        "<main id=\"app\"><noscript>This report needs JavaScript to draw its charts."
        "</noscript></main>\n"
        "<script type=\"application/json\" id=\"memprobe-data\">"
        f"{json_for_script(payload)}</script>\n"
        f"<script>{uplot_js}</script>\n<script>{page_js}</script>\n</body>\n</html>\n"
    )


def report_html(record: RunRecord) -> str:
    """The whole report of ``record`` as one offline HTML document."""
    return _page("memprobe report: " + " ".join(record.command), report_payload(record))


def diff_html(diff: RunDiff) -> str:
    """The diff of two runs as one offline HTML document."""
    return _page("memprobe diff", diff_payload(diff))


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
    series = p.series[name]
    xs, axis = c.xs_of(series, record.x_axis)
    ys = [_num(v) for v in series.value]
    pts = sorted((x, y) for x, y in zip(xs, ys) if not math.isnan(x))
    xs, ys = [x for x, _ in pts], [y for _, y in pts]
    keep = _decimate(xs, ys)
    xs, ys = [xs[i] for i in keep], [ys[i] for i in keep]
    slope = fit.slope_per_step if axis == "step" else fit.slope_per_s
    fit_y: Optional[List[Optional[float]]] = None
    if slope is not None and fit.intercept is not None:
        start = fit.warmup_end_x if fit.warmup_end_x is not None else -math.inf
        fit_y = [fit.intercept + slope * (x - fit.x0) if x >= start else None for x in xs]
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
        + (f" ({fmt_pct(fit.confidence)})" if fit.verdict else ""),
        "rate_text": fmt_rate(fit.slope_per_step, fit.slope_per_s, fit.unit),
        "peak_text": c.peak_text(fit),
        "warmup_end_x": fit.warmup_end_x,
        "warmup_text": c.warmup_text(fit, axis),
        "reason": clean(fit.reason, 300),
        "limit": limit,
    }


def finding_payload(f: Any, record: RunRecord) -> Dict[str, Any]:
    chain = f.evidence.get("chain") or (f.culprit or {}).get("chain")
    return {
        "verdict": f.verdict,
        "kind": clean(f.kind, 40),
        "title": c.finding_title(f, record),
        "explanation": clean(f.explanation, 600),
        "rows": [[k, v] for k, v in c.finding_rows(f) if k != "chain"],
        "chain": [clean(x, 200) for x in chain[:30]] if isinstance(chain, list) else [],
    }


def report_payload(record: RunRecord) -> Dict[str, Any]:
    fits = signal_fits(record)
    conf = c.run_confidence(record, fits)
    procs = []
    for p in record.processes:
        pf = fits.get(p.pid, {})
        procs.append({
            "title": c.process_title(p),
            "subtitle": f"{p.steps:,} steps" + ("" if p.has_agent else ", no agent"),
            "argv": clean(" ".join(p.argv), 400),
            "charts": [chart_payload(p, n, f, record) for n, f in pf.items()],
        })
    return {
        "kind": "report",
        "title": "memprobe report",
        "verdict": record.verdict,
        "verdict_text": c.verdict_word(record.verdict).upper()
        + (f" — confidence {fmt_pct(conf)}" if conf is not None else ""),
        "meta": [
            ["command", clean(" ".join(record.command), 400)],
            ["cwd", clean(record.cwd, 300)],
            ["run", f"{fmt_duration(record.duration_s)}, {c.max_steps(record):,} steps, "
                    f"{c.exit_text(record)}"],
            ["limits", c.limits_text(record)],
            ["schema", clean(record.schema, 60)],
        ],
        "findings": [finding_payload(f, record) for f in record.findings],
        "processes": procs,
        "events": [[f"{e.t:.1f} s", f"{clean(e.kind, 40)} (pid {e.pid}): {clean(e.message)}"]
                   for e in record.events[:50]],
    }
