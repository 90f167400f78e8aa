"""Data-shaping helpers shared by the report, HTML and diff renderers (no output)."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

from memprobe.analysis.compare import SignalFit
from memprobe.record import Finding, Process, RunRecord, Series
from memprobe.render._text import clean, fmt_bytes, fmt_count, fmt_duration, fmt_pct, fmt_rate

VERDICT_STYLE = {"leak": "bold red", "no_leak": "green", "inconclusive": "yellow"}
VERDICT_WORD = {"leak": "LEAK", "no_leak": "no leak", "inconclusive": "inconclusive"}


def verdict_word(verdict: Optional[str]) -> str:
    if verdict is None:
        return "not analysed"
    return VERDICT_WORD.get(verdict, clean(verdict, 20))


def xs_of(series: Series, x_axis: str) -> Tuple[List[float], str]:
    """The x values of ``series`` on the record's axis: steps when every sample has one."""
    if x_axis == "step" and series.step and all(isinstance(s, int) for s in series.step):
        return [float(s) for s in series.step if s is not None], "step"
    return [float(t) if _finite(t) else math.nan for t in series.t], "s"


def fit_xs(series: Series, fit: SignalFit) -> Tuple[List[float], str]:
    """The x values of ``series`` on the axis its fit was made on."""
    return xs_of(series, "step" if fit.per == "step" else "time")


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def run_confidence(record: RunRecord, fits: Dict[int, Dict[str, SignalFit]]) -> Optional[float]:
    """Leak: the strongest leak finding's confidence; otherwise the weakest signal's."""
    if record.verdict == "leak":
        confs = [f.confidence for f in record.findings if f.verdict == "leak"]
        confs += [s.confidence for p in fits.values() for s in p.values() if s.verdict == "leak"]
        return max(confs) if confs else None
    confs = [s.confidence for p in fits.values() for s in p.values() if s.verdict is not None]
    return min(confs) if confs else None


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


def finding_rows(f: Finding) -> List[Tuple[str, str]]:
    """(label, cleaned text) pairs describing one finding, in reading order."""
    rows: List[Tuple[str, str]] = []
    c = f.culprit or {}
    if c.get("holder") is not None:
        rows.append(("holder", clean(c["holder"])))
    if c.get("type") is not None:
        graph = " (holds autograd graphs)" if c.get("holds_autograd_graph") else ""
        rows.append(("type", clean(c["type"]) + graph))
    if c.get("location") is not None:
        rows.append(("line", clean(c["location"])))
    chain = f.evidence.get("chain") or c.get("chain")
    if isinstance(chain, list) and chain:
        rows.append(("chain", " → ".join(clean(x, 120) for x in chain[:12])))
    ev = [f"{clean(k, 40)}={clean(v, 80)}" for k, v in f.evidence.items() if k != "chain"]
    if ev:
        rows.append(("evidence", ", ".join(ev[:8])))
    proj = projection_text(f)
    if proj:
        rows.append(("OOM", proj))
    if f.fix_hint:
        rows.append(("fix", clean(f.fix_hint, 600)))
    return rows


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


def warmup_text(fit: SignalFit, axis: str) -> Optional[str]:
    if fit.warmup_end_x is None:
        return None
    if axis == "step":
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
