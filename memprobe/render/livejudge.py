"""Live verdicts for the table: the run's analysis, redone on the growing series.

Analysis costs the parent CPU (a core the target may want), so it runs at most
every ``min_interval_s`` and never more often than twenty times its own cost (5 % of
a core at most). A
displayed verdict changes only when the new one has held for a few evaluations
in a row (twice that to leave "leak"): a steady run must not flicker. The hysteresis
is analysis.LiveJudge's; this module only schedules it and shapes rows for the table.
"""

from __future__ import annotations

import time
from typing import Any, List, Optional

from rich.text import Text

from memprobe.collect.assemble import build_record
from memprobe.collect.state import RunState
from memprobe.record import ExitInfo
from memprobe.render.fmt import headline_order, safe_text
from memprobe.render.live import VERDICT_STYLE, SignalRow, Verdicts

JUDGE_SHARE = 0.05  # of one core: the parent must not compete with the training
MIN_INTERVAL_S = 2.0  # between two judgements of the whole run


class LiveJudge:
    def __init__(self, detect: Any, min_interval_s: float = MIN_INTERVAL_S) -> None:
        self.detect = detect
        self.min_interval_s = min_interval_s
        self._next = 0.0
        from memprobe.analysis import LiveJudge as Stable

        self._stable = Stable(detect)
        self._verdicts: Verdicts = {}
        self._rows: List[SignalRow] = []
        self._header: Optional[Text] = None

    def _refresh(self, state: RunState) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        from memprobe.analysis import analyze
        from memprobe.analysis.culprit import attribute, live_culprit
        from memprobe.analysis.findings import projection_text, rate_text
        from memprobe.analysis.grouping import group_findings, looked_at
        from memprobe.analysis.native import grown_handles

        record = build_record(
            state, ExitInfo(), duration_s=max(0.0, time.time() - state.started_at), compact=False
        )
        result = analyze(record, self.detect)
        cost = time.monotonic() - now
        # at most every min_interval_s, and never more than 1/SHARE of a core on average
        self._next = time.monotonic() + max(self.min_interval_s, cost / JUDGE_SHARE)
        verdicts: Verdicts = {}
        rows: List[SignalRow] = []
        labels = {p.pid: p.label for p in record.processes}
        for (pid, signal), v in result.verdicts.items():
            shown = self._stable.observe(pid, signal, v).verdict
            # a rate once a fit has one (an inconclusive "too short" has none: not "+0 B/s")
            fitted = v.slope_per_step is not None or v.slope_per_s is not None
            rate = rate_text(v) if v.n >= 3 and fitted else ""
            verdicts[(pid, signal)] = (shown, rate)
            # rows worth a glance: leaks, and signals still being judged that have a value
            if v.last_value is None or signal == "rss_bytes":
                continue
            if shown != "no_leak" or signal.startswith("cuda:"):
                rows.append(
                    SignalRow(
                        labels.get(pid, str(pid)), pid, signal, v.last_value, v.unit, rate, shown
                    )
                )
        rows.sort(key=lambda r: ({"leak": 0, "inconclusive": 1}.get(r.verdict, 2), r.pid, r.signal))
        self._verdicts, self._rows = verdicts, rows
        run = self._stable.run_verdict()
        header = Text("verdict: ", style="bold")
        header.append(run.replace("_", " ").upper(), style=VERDICT_STYLE.get(run, ""))
        findings = group_findings(
            attribute(record, list(result.findings), result.verdicts),
            looked_at(record),
            grown_handles(record),
        )
        leaks = [f for f in findings if f.kind == "leak"]
        if run == "leak" and leaks:
            first = min(leaks, key=headline_order)
            header.append(" · ")
            header.append(safe_text(labels.get(first.pid or -1, "?")))
            holder, kind = first.holder, first.culprit_type
            if holder:
                header.append(" · ")
                header.append(safe_text(str(holder), limit=60, style="bold"))
                if kind:
                    header.append(safe_text(f" ({kind})", limit=40))
            header.append(safe_text(f" · {first.signal} ", limit=60))
            key = (first.pid if first.pid is not None else -1, first.signal)
            header.append(rate_text(result.verdicts[key]) if key in result.verdicts else "")
            header.append(projection_text(first.projected_oom))
        elif run == "inconclusive":
            header.append(" · gathering steps", style="dim")
        # what grows most, while the run is not settled as no leak (a bounded cache that
        # fills, an import cache: the census sees them grow, the verdict says they stop)
        growing = [
            (labels.get(p.pid, str(p.pid)), live_culprit(p.census.entries()))
            for p in state.procs.values()
            if p.census and run != "no_leak"
        ]
        growing = [(label, text) for label, text in growing if text]
        if growing:
            header.append("\ntop growing: ", style="bold")
            label, text = growing[0]
            header.append(safe_text(f"{label}: {text}", limit=110))
        self._header = header

    def verdicts(self, state: RunState) -> Verdicts:
        self._refresh(state)
        return self._verdicts

    def signal_rows(self, state: RunState) -> List[SignalRow]:
        self._refresh(state)
        return self._rows

    def header(self, state: RunState) -> Optional[Text]:
        self._refresh(state)
        return self._header


def make(detect: Any) -> Optional[LiveJudge]:
    if detect is None:
        return None
    return LiveJudge(detect)
