"""The diff of two runs as JSON, with stable (sorted) keys."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

from memprobe.analysis.compare import (
    EXIT_BAD_INPUT,
    EXIT_REGRESSION,
    FindingDiff,
    RunDiff,
    SignalDiff,
    SignalFit,
)
from memprobe.record import Finding, JSONValue
from memprobe.render import _common as c

__all__ = ["DIFF_SCHEMA", "diff_json"]

DIFF_SCHEMA = "memprobe.diff/1"


def _fit_json(fit: Optional[SignalFit], per: str) -> Optional[Dict[str, JSONValue]]:
    if fit is None:
        return None
    return {
        "verdict": fit.verdict,
        "rate": fit.slope_per_step if per == "step" else fit.slope_per_s,
        "slope_per_step": fit.slope_per_step,
        "slope_per_s": fit.slope_per_s,
        "ci_low": fit.ci_low,
        "ci_high": fit.ci_high,
        "ci_per": fit.per,
        "confidence": fit.confidence,
        "peak": fit.peak,
    }


def _signal_json(s: SignalDiff) -> Dict[str, Any]:
    return {
        "process": s.process,
        "signal": s.signal,
        "unit": s.unit,
        "per": s.per,
        "status": s.status,
        "note": s.note,
        "before": _fit_json(s.before, s.per),
        "after": _fit_json(s.after, s.per),
    }


def _finding_json(f: FindingDiff) -> Dict[str, Any]:
    def side(x: Optional[Finding]) -> Optional[Dict[str, Any]]:
        if x is None:
            return None
        rate = x.slope_per_step if f.per == "step" else x.slope_per_s
        return {
            "verdict": x.verdict,
            "rate": rate,
            "confidence": x.confidence,
            "pid": x.pid,
            "fix_hint": x.fix_hint,
        }

    return {
        "process": f.process,
        "signal": f.signal,
        "kind": f.kind,
        "status": f.status,
        "type": f.culprit_type,
        "holder": f.holder,
        "per": f.per,
        "before": side(f.before),
        "after": side(f.after),
    }


def diff_json(diff: RunDiff) -> str:
    """The diff as JSON with stable (sorted) keys; ``exit_code`` is what ``memprobe diff`` exits."""
    code = diff.exit_code
    doc = {
        "schema": DIFF_SCHEMA,
        "exit_code": code,
        "result": {EXIT_REGRESSION: "regression", EXIT_BAD_INPUT: "nothing_comparable"}.get(
            code, "ok"
        ),
        "per": diff.per,
        "regressions": diff.regressions,
        "before": {
            "command": diff.before.command,
            "verdict": diff.before.verdict,
            "schema": diff.before.schema,
            "x_axis": diff.before.x_axis,
        },
        "after": {
            "command": diff.after.command,
            "verdict": diff.after.verdict,
            "schema": diff.after.schema,
            "x_axis": diff.after.x_axis,
        },
        "signals": [_signal_json(s) for s in diff.signals],
        "findings": [_finding_json(f) for f in diff.findings],
        "notes": diff.notes,
    }
    return (
        json.dumps(c.json_safe(doc), indent=2, sort_keys=True, ensure_ascii=True, allow_nan=False)
        + "\n"
    )
