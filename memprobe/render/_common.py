"""Data-shaping helpers shared by the report, HTML and diff renderers (no output)."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

from memprobe.analysis.compare import SignalFit
from memprobe.analysis.series import step_clock, with_steps
from memprobe.record import Finding, Mark, Process, RunRecord, Series
from memprobe.render._text import clean, fmt_bytes, fmt_count, fmt_duration, fmt_pct, fmt_rate

VERDICT_STYLE = {"leak": "bold red", "no_leak": "green", "inconclusive": "yellow"}
VERDICT_WORD = {"leak": "LEAK", "no_leak": "no leak", "inconclusive": "inconclusive"}


def verdict_word(verdict: Optional[str]) -> str:
    if verdict is None:
        return "not analysed"
    return VERDICT_WORD.get(verdict, clean(verdict, 20))


def points(series: Series, x_axis: str) -> Tuple[List[float], List[Optional[float]], str]:
    """(x, value, axis) of ``series``, sorted by x: on steps when ``x_axis`` is "step" and
    samples carry steps (samples without one are dropped, as the analysis does), else on
    seconds."""
    vals = [float(v) if _finite(v) else None for v in series.value]
    if x_axis == "step":
        pts = [
            (float(s), v)
            for s, v in zip(series.step, vals)
            if isinstance(s, int) and not isinstance(s, bool)
        ]
        if pts:
            pts.sort(key=lambda p: p[0])
            return [p[0] for p in pts], [p[1] for p in pts], "step"
    tp = sorted(((float(t), v) for t, v in zip(series.t, vals) if _finite(t)), key=lambda p: p[0])
    return [p[0] for p in tp], [p[1] for p in tp], "s"


def stepped(series: Series, process: Optional[Process]) -> Series:
    """``series`` with steps given to time-only samples (outside sampling: USS, PSS, a
    worker's RSS) from the process' step clock — exactly as the analysis does, so charts
    and fits share their x-axis."""
    if process is None or sum(1 for st in series.step if st is not None) >= 3:
        return series
    clock = step_clock(process.series)
    return with_steps(series, clock) if clock is not None else series


def fit_points(
    series: Series, fit: SignalFit, process: Optional[Process] = None
) -> Tuple[List[float], List[Optional[float]], str]:
    """The points of ``series`` on the axis its fit was made on."""
    if fit.per == "step":
        return points(stepped(series, process), "step")
    return points(series, "time")


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def run_confidence(record: RunRecord, fits: Dict[int, Dict[str, SignalFit]]) -> Optional[float]:
    """Leak: the strongest leak finding's confidence; otherwise the weakest signal's."""
    if record.verdict == "leak":
        confs = [f.confidence for f in record.findings if f.verdict == "leak"]
        confs += [s.confidence for p in fits.values() for s in p.values() if s.verdict == "leak"]
        return max(confs) if confs else None
    if record.verdict != "no_leak":
        return None  # an inconclusive run has no confidence to speak of
    confs = [s.confidence for p in fits.values() for s in p.values() if s.verdict == "no_leak"]
    return min(confs) if confs else None


def row_rank(fit: SignalFit) -> int:
    """Leaks first, then signals with a rate, then those the analysis could not fit."""
    if fit.verdict == "leak":
        return 0
    return 1 if fit.slope is not None else 2


def process_title(p: Process) -> str:
    return f"{clean(p.label, 40)} (pid {p.pid})"


def process_by_pid(record: RunRecord) -> Dict[int, Process]:
    return {p.pid: p for p in record.processes}


def finding_title(f: Finding, record: RunRecord) -> str:
    proc = process_by_pid(record).get(f.pid) if f.pid is not None else None
    where = process_title(proc) if proc else (f"pid {f.pid}" if f.pid is not None else "run")
    rate = fmt_rate(f.slope_per_step, f.slope_per_s, f.unit)
    per_min = ""
    if f.slope_per_step is not None and f.slope_per_s is not None:
        per_min = f" ({fmt_rate(None, f.slope_per_s, f.unit)})"
    return f"{clean(f.signal, 60)} in {where}: {rate}{per_min}, confidence {fmt_pct(f.confidence)}"


def short_path(text: str, cwd: str = "") -> str:
    """A location made readable: relative to the run's cwd, or from site-packages on."""
    if cwd and text.startswith(cwd.rstrip("/") + "/"):
        return text[len(cwd.rstrip("/")) + 1 :]
    i = text.find("site-packages/")
    return text[i + len("site-packages/") :] if i >= 0 else text


def finding_rows(f: Finding, cwd: str = "") -> List[Tuple[str, str]]:
    """(label, cleaned text) pairs describing one finding, in reading order."""
    rows: List[Tuple[str, str]] = []
    c = f.culprit
    if c is not None and c.get("holder") is not None:
        rows.append(("holder", clean(c.get("holder"))))
    if c is not None and c.get("type") is not None:
        graph = " (holds autograd graphs)" if c.get("holds_autograd_graph") else ""
        rows.append(("type", clean(c.get("type")) + graph))
    if c is not None and c.get("location") is not None:
        rows.append(("line", short_path(clean(c.get("location")), cwd)))
    alloc = f.evidence.get("allocated_at")
    if isinstance(alloc, list):
        frames = [
            short_path(clean(a, 200), cwd)
            for a in alloc
            if clean(a, 200) != clean(f.culprit.get("location", "") if f.culprit else "")
        ]
        more = f" (+{len(frames) - 3} more)" if len(frames) > 3 else ""
        if frames:
            rows.append(("alloc", ", ".join(frames[:3]) + more))
    chain = f.evidence.get("chain")
    if isinstance(chain, list) and chain:
        rows.append(("chain", " → ".join(clean(x, 120) for x in chain[:12])))
    ev = evidence_text(f)
    if ev:
        rows.append(("evidence", ev))
    proj = projection_text(f)
    if proj:
        rows.append(("OOM", proj))
    if f.fix_hint:
        rows.append(("fix", clean(f.fix_hint, 600)))
    return rows


_EVIDENCE_SKIP = {
    "chain",
    "axis",
    "warmup_end_x",
    "reason",
    "x0",
    "x_end",
    "intercept",
    "allocated_at",
}


def _g(v: Any) -> str:
    if isinstance(v, bool) or not _finite(v):
        return clean(v, 80)
    if isinstance(v, int) or float(v).is_integer() or abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def evidence_text(f: Finding) -> str:
    """The evidence dict in words: known keys formatted, others as ``key=value``."""
    # every key's value is shown by its own rule; a record from elsewhere may hold anything
    ev: Dict[str, Any] = dict(f.evidence)
    per = "step" if ev.get("axis", "step") == "step" else "s"
    out: List[str] = []
    for k, v in ev.items():
        if k in _EVIDENCE_SKIP or v is None or v is False:
            continue
        if k == "n" and _finite(v):
            out.append(f"{_g(v)} samples")
        elif k == "window" and isinstance(v, list) and len(v) == 2 and all(map(_finite, v)):
            out.append(
                f"fitted over {per}s {_g(v[0])}–{_g(v[1])}"
                if per == "step"
                else f"fitted over {fmt_duration(v[0])}–{fmt_duration(v[1])}"
            )
        elif k == "ci" and isinstance(v, list) and len(v) == 2 and all(map(_finite, v)):
            lo, hi = (fmt_bytes(x, True) if f.unit == "bytes" else fmt_count(x, True) for x in v)
            out.append(f"interval {lo} … {hi}/{per}")
        elif k == "p_value" and _finite(v):
            out.append(f"p={v:.1e}")
        elif k == "growth" and _finite(v):
            out.append("grew " + (fmt_bytes(v, True) if f.unit == "bytes" else fmt_count(v, True)))
        elif k == "autocorrelation_inflation" and _finite(v):
            if v > 1.05:
                out.append(f"autocorrelation ×{v:.1f}")
        elif k == "sawtooth_floor" and v is True:
            out.append("judged on the floor of a sawtooth")
        elif k == "related_signals" and isinstance(v, list):
            out.append("also growing: " + ", ".join(clean(x, 60) for x in v[:6]))
        else:
            more = f" (+{len(v) - 3} more)" if isinstance(v, list) and len(v) > 3 else ""
            shown = ", ".join(_g(x) for x in v[:3]) + more if isinstance(v, list) else _g(v)
            out.append(f"{clean(k, 40)}={shown}")
    return "; ".join(out[:10])


def needed_text(fits: Dict[int, Dict[str, SignalFit]]) -> Optional[str]:
    """What would settle an inconclusive run, from the first signal that says."""
    for pf in fits.values():
        for name, fit in pf.items():
            if fit.verdict == "inconclusive" and fit.needed and fit.slope is not None:
                return f"{clean(fit.needed, 120)} ({clean(name, 60)})"
    return None


def projection_text(f: Finding) -> Optional[str]:
    p = f.projected_oom
    if not p:
        return None
    limit, step, t_s = p.get("limit_bytes"), p.get("step"), p.get("t_s")
    parts = []
    if isinstance(step, (int, float)) and _finite(step):
        parts.append(f"≈ step {int(step):,}")
    if _finite(t_s):
        parts.append(f"≈ {fmt_duration(t_s)} into the run")
    target = f"reaches {fmt_bytes(limit)}" if _finite(limit) else "reaches the memory limit"
    if not parts:
        return target
    return f"{target} at {parts[0]}" + (f" ({parts[1]})" if len(parts) > 1 else "")


def warmup_text(fit: SignalFit) -> Optional[str]:
    if fit.warmup_end_x is None:
        return None
    if fit.per == "step":
        return f"step {int(fit.warmup_end_x):,}"
    return fmt_duration(fit.warmup_end_x)


def peak_text(fit: SignalFit) -> str:
    return fmt_bytes(fit.peak) if fit.unit == "bytes" else fmt_count(fit.peak)


def limits_text(record: RunRecord) -> str:
    parts = []
    if record.limits.ram_bytes:
        source = clean(record.limits.ram_source, 40)
        parts.append(f"RAM {fmt_bytes(record.limits.ram_bytes)} ({source})")
    for i, g in enumerate(record.limits.gpu_bytes):
        parts.append(f"GPU{i} {fmt_bytes(g)}")
    return ", ".join(parts) or "unknown"


def exit_text(record: RunRecord) -> str:
    e = record.exit
    if e.signal is not None:
        s = f"killed by signal {e.signal}"
    elif e.code is not None:
        s = f"exit code {e.code}"
    else:
        s = "exit unknown"
    if e.oom_killed:
        s += " (OOM-killed)"
    elif e.oom_killed is None and e.signal == 9:  # the cgroup's oom_kill counter was unreadable
        s += " (OOM killer: unknown)"
    return s


def max_steps(record: RunRecord) -> int:
    return max((p.steps for p in record.processes), default=0)


def json_safe(obj: Any, depth: int = 0) -> Any:
    """``obj`` with non-finite floats as None and unknown objects as strings (valid JSON)."""
    if depth > 20:
        return None
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, dict):
        return {str(k): json_safe(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v, depth + 1) for v in obj]
    return str(obj)


MAX_MARKS_SHOWN = 12


def mark_x(m: Mark, axis: str) -> float:
    """Where a mark sits on a chart's x-axis: its step (0 before the first), or its time."""
    if axis == "step":
        return float(m.step) if m.step is not None else 0.0
    return float(m.t)


def marks_text(marks: List[Mark]) -> str:
    """'epoch 1 (step 100) · epoch 2 (step 200) · …', the first and the latest."""
    shown = list(marks)
    if len(shown) > MAX_MARKS_SHOWN:
        half = MAX_MARKS_SHOWN // 2
        shown = shown[:half] + shown[-half:]
    parts = [
        f"{clean(m.label, 60)} ({f'step {m.step:,}' if m.step is not None else f'{m.t:.1f} s'})"
        for m in shown
    ]
    if len(marks) > len(shown):
        parts.insert(MAX_MARKS_SHOWN // 2, f"… {len(marks) - len(shown)} more")
    return " · ".join(parts)
