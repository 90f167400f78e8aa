"""Join analysis to a raw record: verdicts, findings, per-signal summaries, culprits."""

from __future__ import annotations

import dataclasses
from typing import Callable, List, Optional

from memprobe.analysis import DetectOptions, analyze
from memprobe.record import Finding, RunRecord

_attribute: Optional[Callable[[RunRecord, List[Finding]], List[Finding]]]
try:  # culprit attribution (census joins) lands separately from the verdicts
    from memprobe.analysis.culprit import attribute as _attribute
except ImportError:
    _attribute = None


def finalize(record: RunRecord, detect_options: Optional[DetectOptions] = None) -> RunRecord:
    """Analyse a raw record and return it with findings, verdict and per-signal summaries."""
    result = analyze(record, detect_options or DetectOptions())
    findings = list(result.findings)
    if _attribute is not None:
        findings = _attribute(record, findings)
    return dataclasses.replace(
        record, findings=findings, verdict=result.verdict, signals=result.signals
    )
