"""Join analysis to a raw record: verdicts, findings, per-signal summaries, culprits."""

from __future__ import annotations

import dataclasses
from typing import Optional

from memprobe.analysis import DetectOptions, analyze
from memprobe.analysis.culprit import attribute
from memprobe.analysis.grouping import group_findings, looked_at
from memprobe.analysis.native import grown_handles
from memprobe.record import RunRecord


def finalize(record: RunRecord, detect_options: Optional[DetectOptions] = None) -> RunRecord:
    """Analyse a raw record and return it with findings (one per culprit), verdict and
    per-signal summaries."""
    result = analyze(record, detect_options or DetectOptions())
    findings = group_findings(
        attribute(record, list(result.findings), result.verdicts),
        looked_at(record),
        grown_handles(record),
    )
    return dataclasses.replace(
        record, findings=findings, verdict=result.verdict, signals=result.signals
    )
