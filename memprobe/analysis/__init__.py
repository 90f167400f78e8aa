"""Leak detection: pure functions from recorded series to verdicts and findings.

No I/O, no clock, no terminal: samples in, findings out.

- :func:`judge_series` judges one series (x, y) and returns a :class:`SignalVerdict`;
- :func:`analyze` judges every signal of a :class:`~memprobe.record.RunRecord` and
  returns an :class:`Analysis` (findings, run verdict, per-signal summaries);
- :class:`LiveJudge` keeps verdicts stable while a run grows (the live table);
- :class:`DetectOptions` holds every threshold, with documented defaults.
"""

from __future__ import annotations

from memprobe.analysis.findings import describe, rate_text
from memprobe.analysis.live import LiveJudge
from memprobe.analysis.options import DetectOptions
from memprobe.analysis.projection import limit_for, project_oom
from memprobe.analysis.run import Analysis, analyze, process_axis, run_verdict
from memprobe.analysis.series import family_of, prepare, unit_of
from memprobe.analysis.verdict import (
    INCONCLUSIVE,
    LEAK,
    NO_LEAK,
    SignalVerdict,
    judge_series,
)
from memprobe.analysis.wording import fmt_bytes

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
]
