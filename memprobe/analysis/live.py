"""Verdicts that hold still while a run grows: hysteresis for the live table.

The live table judges every signal every few seconds on the series so far.
A raw verdict near a threshold could flip with each new point; a person
watching must see it change only when the evidence has changed. So a new
verdict is shown only after it has come out ``hold`` times in a row, and
leaving "leak" takes twice as long as entering it. A signal seen for the first
time (a container a census found, a new process) is no exception: its first
"leak" is shown only once it has held.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

from memprobe.analysis.evidence import COUNTED, corroborate
from memprobe.analysis.judge import judge_series
from memprobe.analysis.options import DEFAULT_OPTIONS, DetectOptions
from memprobe.analysis.run import run_verdict
from memprobe.analysis.series import prepare
from memprobe.analysis.verdict import INCONCLUSIVE, LEAK, SignalVerdict
from memprobe.analysis.wording import unit_of
from memprobe.record import Series

Key = Tuple[int, str]


@dataclass
class _State:
    shown: str
    pending: Optional[str] = None
    count: int = 0


class LiveJudge:
    """Keeps one stable verdict per (pid, signal) across repeated calls.

    Call :meth:`update` with the whole series so far (it is re-judged each
    time: the warm-up and the fit move as data comes in), then read
    :meth:`run_verdict` for the header line.
    """

    def __init__(self, options: DetectOptions = DEFAULT_OPTIONS, hold: int = 3) -> None:
        self.options = options
        self.hold = max(1, hold)
        self._states: Dict[Key, _State] = {}
        self._latest: Dict[Key, SignalVerdict] = {}

    def update(
        self, pid: int, signal: str, series: Series, axis: Optional[str] = None
    ) -> SignalVerdict:
        """Judge ``series`` and return the verdict with its stable (shown) label."""
        prep = prepare(series, axis)
        raw = judge_series(
            prep.x,
            prep.y,
            unit_of(signal),
            self.options,
            axis=prep.axis,
            t=prep.t,
            signal=signal,
            n_tests=max(1, len(self._states) + (0 if (pid, signal) in self._states else 1)),
        )
        return self.observe(pid, signal, raw)

    def observe(self, pid: int, signal: str, raw: SignalVerdict) -> SignalVerdict:
        """Feed a verdict computed elsewhere; returns it with the stable label."""
        key = (pid, signal)
        state = self._states.get(key)
        if state is None:
            # a signal first seen now (a container found by a census, a new process) shows a
            # first "leak" only after it held like any change: one judgement is not evidence
            first = INCONCLUSIVE if raw.verdict == LEAK and self.hold > 1 else raw.verdict
            state = self._states[key] = _State(shown=first)
            if first != raw.verdict:
                state.pending, state.count = raw.verdict, 1
        elif raw.verdict == state.shown:
            state.pending, state.count = None, 0
        else:
            if raw.verdict == state.pending:
                state.count += 1
            else:
                state.pending, state.count = raw.verdict, 1
            needed = self.hold * 2 if state.shown == LEAK else self.hold
            if state.count >= needed:
                state.shown, state.pending, state.count = raw.verdict, None, 0
        shown = raw if raw.verdict == state.shown else replace(raw, verdict=state.shown)
        self._latest[key] = shown
        return shown

    def verdicts(self, pid: Optional[int] = None) -> Dict[Key, SignalVerdict]:
        """The latest stable verdicts, of one process or of all."""
        return {k: v for k, v in self._latest.items() if pid is None or k[0] == pid}

    def run_verdict(self) -> str:
        """The run's verdict from the stable signal verdicts (same rule as analyze)."""
        by_pid: Dict[int, Dict[str, SignalVerdict]] = {}
        for (pid, name), v in self._latest.items():
            by_pid.setdefault(pid, {})[name] = v
        merged: List[SignalVerdict] = []
        for verdicts in by_pid.values():
            merged.extend(corroborate(verdicts).values())
        return run_verdict(merged)

    def leaking(self) -> List[Tuple[Key, SignalVerdict]]:
        """Stable leak verdicts that count toward the run verdict, strongest first."""
        items = [
            (k, v) for k, v in self._latest.items() if v.verdict == LEAK and v.family in COUNTED
        ]
        return sorted(items, key=lambda kv: -kv[1].confidence)
