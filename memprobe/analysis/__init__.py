"""Leak detection: pure functions from recorded series to verdicts and findings.

No I/O, no clock, no terminal: samples in, findings out.

- :func:`judge_series` judges one series (x, y) and returns a :class:`SignalVerdict`;
- :func:`analyze` judges every signal of a :class:`~memprobe.record.RunRecord` and
  returns an :class:`Analysis` (findings, run verdict, per-signal summaries);
- :class:`LiveJudge` keeps verdicts stable while a run grows (the live table);
- :class:`DetectOptions` holds every threshold, with documented defaults.

The names are loaded when first used (PEP 562): the statistics need scipy, whose import
takes about a second, and ``memprobe run`` starts the target before it pays for that
(``from memprobe.analysis.wording import unit_of`` loads neither numpy nor scipy).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memprobe.analysis.findings import describe, rate_text
    from memprobe.analysis.judge import judge_series
    from memprobe.analysis.live import LiveJudge
    from memprobe.analysis.options import DetectOptions
    from memprobe.analysis.projection import limit_for, project_oom
    from memprobe.analysis.run import Analysis, analyze, process_axis, run_verdict
    from memprobe.analysis.series import family_of, prepare
    from memprobe.analysis.verdict import (
        INCONCLUSIVE,
        LEAK,
        NO_LEAK,
        SignalVerdict,
    )
    from memprobe.analysis.wording import fmt_bytes, unit_of

_WHERE = {
    "describe": "findings",
    "rate_text": "findings",
    "LiveJudge": "live",
    "DetectOptions": "options",
    "limit_for": "projection",
    "project_oom": "projection",
    "Analysis": "run",
    "analyze": "run",
    "process_axis": "run",
    "run_verdict": "run",
    "family_of": "series",
    "prepare": "series",
    "unit_of": "wording",
    "INCONCLUSIVE": "verdict",
    "LEAK": "verdict",
    "NO_LEAK": "verdict",
    "SignalVerdict": "verdict",
    "judge_series": "judge",
    "fmt_bytes": "wording",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def warm_up() -> None:
    """Import the statistics now (scipy): ``memprobe run`` calls it from a thread of its own
    while the target runs, so that the analysis at the end does not wait for it."""
    importlib.import_module(f"{__name__}.run")
    importlib.import_module(f"{__name__}.live")


__all__ = [
    "INCONCLUSIVE",
    "LEAK",
    "NO_LEAK",
    "Analysis",
    "DetectOptions",
    "LiveJudge",
    "SignalVerdict",
    "analyze",
    "describe",
    "family_of",
    "fmt_bytes",
    "judge_series",
    "limit_for",
    "prepare",
    "process_axis",
    "project_oom",
    "rate_text",
    "run_verdict",
    "unit_of",
    "warm_up",
]
