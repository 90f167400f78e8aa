"""Join analysis to a raw record: verdicts, findings, per-signal summaries, culprits."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from memprobe.record import RunRecord


def finalize(record: RunRecord, detect_options: Optional[Any] = None) -> RunRecord:
    from memprobe import analysis

    options = detect_options if detect_options is not None else analysis.DetectOptions()
    result = analysis.analyze(record, options)
    findings = list(result.findings)
    try:
        from memprobe.analysis import culprit
    except ImportError:  # attribution not available in this build
        culprit = None  # type: ignore[assignment]
    if culprit is not None:
        findings = culprit.attribute(record, findings)
    return dataclasses.replace(
        record, findings=findings, verdict=result.verdict, signals=result.signals
    )
