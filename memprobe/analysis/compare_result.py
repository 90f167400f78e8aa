"""What a comparison of two runs gives: its options, the per-signal and per-finding diffs
with their statuses, and the CI gate on them (exit codes). ``compare`` computes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from memprobe.analysis.compare_fits import SignalFit, rate
from memprobe.analysis.compare_match import ProcessMatch
from memprobe.record import Finding, RunRecord

__all__ = [
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_BAD_INPUT",
    "STATUSES",
    "STATUSES_BY_WEIGHT",
    "CompareOptions",
    "SignalDiff",
    "FindingDiff",
    "RunDiff",
    "diff_exit_code",
]

EXIT_OK = 0
#: a new leak, or a leak whose rate rose beyond noise and the tolerance
EXIT_REGRESSION = 3
#: a record that cannot be read, or two runs with nothing comparable
EXIT_BAD_INPUT = 2

STATUSES = ("fixed", "persisting", "new", "improved", "regressed", "same", "not_compared")
FAILING = frozenset({"new", "regressed"})
STATUSES_BY_WEIGHT = ("new", "regressed", "persisting", "improved", "fixed", "same", "not_compared")


@dataclass(frozen=True)
class CompareOptions:
    #: rate changes smaller than this fraction of the larger rate are "same"
    rel_tolerance: float = 0.25
    #: leaks slower than these (per step, or per second on a time axis) do not fail the gate
    min_rate_bytes: float = 0.0
    min_rate_count: float = 0.0
    #: leaks judged with less confidence than this do not fail the gate
    min_confidence: float = 0.0
    #: also fail when a leak persists (not only when one is new or worse)
    fail_on_persisting: bool = False
    #: also gate on every signal's own verdict, not only on the findings
    strict_signals: bool = False


@dataclass(frozen=True)
class SignalDiff:
    process: str
    signal: str
    unit: str
    per: str  # "step" | "s": the unit of rate_before / rate_after
    before: Optional[SignalFit]
    after: Optional[SignalFit]
    status: str
    note: str = ""

    @property
    def rate_before(self) -> Optional[float]:
        return rate(self.before, self.per)

    @property
    def rate_after(self) -> Optional[float]:
        return rate(self.after, self.per)


@dataclass(frozen=True)
class FindingDiff:
    process: str
    signal: str
    kind: str
    culprit_type: Optional[str]
    holder: Optional[str]
    per: str
    before: Optional[Finding]
    after: Optional[Finding]
    status: str


@dataclass(frozen=True)
class RunDiff:
    before: RunRecord
    after: RunRecord
    options: CompareOptions
    per: str
    processes: List[ProcessMatch]
    signals: List[SignalDiff]
    findings: List[FindingDiff]
    notes: List[str] = field(default_factory=list)  # what could not be compared, and why

    @property
    def regressions(self) -> List[str]:
        """What fails the CI gate, in words (empty: no regression)."""
        return _regressions(self)

    @property
    def exit_code(self) -> int:
        return diff_exit_code(self)


def diff_exit_code(diff: RunDiff) -> int:
    if diff.regressions:
        return EXIT_REGRESSION
    if not any(s.before is not None and s.after is not None for s in diff.signals):
        return EXIT_BAD_INPUT
    return EXIT_OK


def _regressions(diff: RunDiff) -> List[str]:
    """The gate: findings (the analysis' judgement of what leaks) that are new or worse;
    the run verdict turning to leak when the after run has no findings to weigh; and,
    with ``strict_signals``, any signal whose own verdict is a new or worse leak."""
    o = diff.options
    failing = FAILING | ({"persisting"} if o.fail_on_persisting else set())
    out = []
    for f in diff.findings:
        a = f.after
        if f.status not in failing or a is None or a.verdict != "leak":
            continue
        rate = a.slope_per_step if f.per == "step" else a.slope_per_s
        if _gated(rate, a.unit, a.confidence, o):
            out.append(f"{f.signal} in {f.process}: {f.status} leak")
    if not diff.after.findings and diff.after.verdict == "leak" and diff.before.verdict != "leak":
        out.append("the run verdict turned to leak")
    if o.strict_signals:
        for s in diff.signals:
            if (
                s.status in failing
                and s.after is not None
                and s.after.verdict == "leak"
                and _gated(s.rate_after, s.unit, s.after.confidence, o)
            ):
                out.append(f"signal {s.signal} in {s.process}: {s.status} leak")
    return list(dict.fromkeys(out))


def _gated(rate: Optional[float], unit: str, confidence: float, o: CompareOptions) -> bool:
    floor = o.min_rate_bytes if unit == "bytes" else o.min_rate_count
    if rate is not None and abs(rate) < floor:
        return False
    return confidence >= o.min_confidence
