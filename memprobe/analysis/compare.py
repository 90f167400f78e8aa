"""Compare two run records signal by signal and finding by finding (pure).

``compare(before, after)`` matches processes (role, rank, worker id, then
order), their signals (by name) and the findings, and gives each a status:

- ``fixed``: growth before that the after run no longer shows, whatever the before
  verdict: a leak before and none after, or an inconclusive before run growing at a rate
  that counts and an after run that does not grow;
- ``new``: no leak before (or not measured), a leak after;
- ``persisting``: a leak in both at the same rate (within noise);
- ``improved`` / ``regressed``: a leak whose rate fell / rose beyond noise;
- ``same``: no leak in either;
- ``not_compared``: present in one run only and not a leak there.

A rate change is "beyond noise" only when the two confidence intervals do not
overlap *and* it exceeds ``CompareOptions.rel_tolerance`` of the larger rate.
A census signal (``container:…``, ``objects:…``) is recorded only while it
grows: absent from a run that recorded its family, it counts as not growing.

The CI gate weighs the findings — the analysis' judgement of what leaks — not
every signal (``strict_signals`` adds those): a new or regressed leak finding
fails it, subject to the ``CompareOptions`` thresholds.

Exit codes for CI (``diff_exit_code``): ``EXIT_OK`` (0) no regression,
``EXIT_REGRESSION`` (3) a new or worse leak, ``EXIT_BAD_INPUT`` (2) a record
that cannot be read, or two runs with nothing in common to compare.

The options, the result types, the statuses and the gate are in
``compare_result``; this module re-exports them.
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Tuple

from memprobe.analysis.compare_fits import SignalFit, as_fit, rate, signal_fits
from memprobe.analysis.compare_match import ProcessMatch, match_processes
from memprobe.analysis.compare_result import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    EXIT_REGRESSION,
    STATUSES,
    STATUSES_BY_WEIGHT,
    CompareOptions,
    FindingDiff,
    RunDiff,
    SignalDiff,
    diff_exit_code,
)
from memprobe.analysis.options import DetectOptions
from memprobe.analysis.wording import unit_of
from memprobe.record import Finding, Process, RunRecord

__all__ = [
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_BAD_INPUT",
    "STATUSES",
    "SignalFit",
    "signal_fits",
    "CompareOptions",
    "ProcessMatch",
    "SignalDiff",
    "FindingDiff",
    "RunDiff",
    "compare",
    "diff_exit_code",
]

# census families recorded only while they grow, and the census entry key that shows
# the census looked at them
_CENSUS_KEYS = {"container": "containers", "objects": "types"}


def compare(
    before: RunRecord, after: RunRecord, options: CompareOptions = CompareOptions()
) -> RunDiff:
    notes: List[str] = []
    per = "step" if before.x_axis == after.x_axis == "step" else "s"
    if per == "s" and before.x_axis != after.x_axis:
        notes.append(
            f"x-axes differ ({before.x_axis} vs {after.x_axis}): rates compared per second"
        )
    if before.schema != after.schema:
        notes.append(f"schema versions differ ({before.schema} vs {after.schema})")
    if before.command != after.command:
        notes.append("the runs are of different commands; signals matched by name")
    matches = match_processes(before.processes, after.processes)
    for m in matches:
        if m.before is None or m.after is None:
            which = "before" if m.after is None else "after"
            notes.append(f"process {m.label} exists only in the {which} run")
    fits_b, fits_a = signal_fits(before), signal_fits(after)
    signals: List[SignalDiff] = []
    for m in matches:
        sb = fits_b.get(m.before.pid, {}) if m.before else {}
        sa = fits_a.get(m.after.pid, {}) if m.after else {}
        for name in list(sb) + [n for n in sa if n not in sb]:
            fb, fa = sb.get(name), sa.get(name)
            present = [f for f in (fb, fa) if f is not None]
            # per step only where both fits are on steps (a worker may have none)
            sper = (
                "step"
                if per == "step"
                and all(f.per == "step" and f.slope_per_step is not None for f in present)
                else "s"
            )
            if fa is None and fb is not None and m.after is not None and _tracked(m.after, name):
                grew = fb.verdict == "leak" or (
                    fb.verdict == "inconclusive" and _matters(rate(fb, sper) or 0.0, fb.unit, sper)
                )
                status = "fixed" if grew else "same"
                note = "not recorded after: it no longer grows"
            elif (
                fb is None and fa is not None and m.before is not None and _tracked(m.before, name)
            ):
                status = "new" if fa.verdict == "leak" else "same"
                note = "not recorded before: it did not grow"
            else:
                status, note = _status(fb, fa, sper, options)
            unit = present[0].unit if present else unit_of(name)
            signals.append(SignalDiff(m.label, name, unit, sper, fb, fa, status, note))
    order = {m.label: i for i, m in enumerate(matches)}
    signals.sort(key=lambda s: (order.get(s.process, 0), STATUSES_BY_WEIGHT.index(s.status)))
    missing = sorted({s.signal for s in signals if s.status == "not_compared"})
    if missing:
        notes.append("measured in one run only: " + ", ".join(missing))
    findings = _match_findings(before, after, matches, signals, per, options)
    return RunDiff(before, after, options, per, matches, signals, findings, notes)


def _ci(fit: SignalFit, per: str) -> Optional[Tuple[float, float]]:
    if fit.ci_low is None or fit.ci_high is None:
        return None
    if fit.per == per:
        return fit.ci_low, fit.ci_high
    # the interval was fitted on the other axis: rescale it by the ratio of the slopes
    own, other = rate(fit, fit.per), rate(fit, per)
    if own is None or other is None or own == 0:
        return None
    k = other / own
    lo, hi = sorted((fit.ci_low * k, fit.ci_high * k))
    return lo, hi


def _change(b: SignalFit, a: SignalFit, per: str, options: CompareOptions) -> int:
    """-1 lower, 0 same within noise, +1 higher (after vs before)."""
    rb, ra = rate(b, per), rate(a, per)
    if rb is None or ra is None or not (math.isfinite(rb) and math.isfinite(ra)):
        return 0
    if abs(ra - rb) <= options.rel_tolerance * max(abs(ra), abs(rb)):
        return 0
    cb, ca = _ci(b, per), _ci(a, per)
    if cb is not None and ca is not None and cb[0] <= ca[1] and ca[0] <= cb[1]:
        return 0  # the intervals overlap: within noise
    return 1 if ra > rb else -1


def _status(
    b: Optional[SignalFit], a: Optional[SignalFit], per: str, options: CompareOptions
) -> Tuple[str, str]:
    leak_b = b is not None and b.verdict == "leak"
    leak_a = a is not None and a.verdict == "leak"
    if a is None or b is None:
        if leak_a:
            return "new", "not measured in the before run"
        return "not_compared", "only in the " + ("after" if b is None else "before") + " run"
    if leak_b and leak_a:
        return {-1: "improved", 0: "persisting", 1: "regressed"}[_change(b, a, per, options)], ""
    if leak_b:
        if a.verdict == "no_leak":
            return "fixed", ""
        if _growth_gone(b, a, per, options):
            return "fixed", "the after run is inconclusive but shows none of that growth"
        # inconclusive after, still at a rate like the before one: not fixed, perhaps slower
        lower = _change(b, a, per, options) < 0
        return ("improved" if lower else "persisting"), "the after run is inconclusive"
    if leak_a:
        if (
            b.verdict == "inconclusive"
            and rate(b, per) is not None
            and _change(b, a, per, options) == 0
        ):
            return "persisting", "the before run was inconclusive at the same rate"
        return "new", ("the before run was inconclusive" if b.verdict == "inconclusive" else "")
    if a.verdict is None or b.verdict is None:
        return "not_compared", "no analysis in the " + ("after" if a.verdict is None else "before")
    if b.verdict == "inconclusive" and _growth_gone(b, a, per, options):
        # the growth the before run could not yet call a leak is gone: that is a fix too
        return "fixed", "the before run was inconclusive, growing; the after run does not grow"
    return "same", ""


def _growth_gone(b: SignalFit, a: SignalFit, per: str, options: CompareOptions) -> bool:
    """Did the before run grow at a rate that matters, and does the after run show none of
    it? The after run is no leak and grows by nothing it can tell from noise, and its rate
    is clearly under the before one: below the before run's interval, or the before rate
    above the after run's interval, or under ``rel_tolerance`` of it."""
    rb, ra = rate(b, per), rate(a, per)
    if rb is None or not math.isfinite(rb) or not _matters(rb, b.unit, per):
        return False
    if a.verdict == "leak" or _grows(a, per):
        return False
    if ra is None or not math.isfinite(ra):
        return a.verdict == "no_leak" or _range_rules_out(rb, a, per)
    cb, ca = _ci(b, per), _ci(a, per)
    return (
        (cb is not None and ra < cb[0])
        or (ca is not None and ca[1] < rb)
        or ra <= options.rel_tolerance * rb
    )


def _range_rules_out(rb: float, a: SignalFit, per: str) -> bool:
    """An after run with too few points for a rate (a census-only series) still rules the
    before growth out when everything its points moved, low to peak, is under a tenth of
    what the before rate would have added over the steps (or seconds) they span."""
    span = a.span_steps if per == "step" else a.span_s
    if span is None or span <= 0 or a.peak is None or a.low is None or a.n < 3:
        return False
    return a.peak - a.low < 0.1 * rb * span


def _grows(fit: SignalFit, per: str) -> bool:
    """Growth the fit tells from noise: a positive rate whose interval excludes zero."""
    r, ci = rate(fit, per), _ci(fit, per)
    return r is not None and r > 0 and ci is not None and ci[0] > 0


def _matters(r: float, unit: str, per: str) -> bool:
    """A rate at or above what the detector counts by default (1 KiB or 0.05 items a step)."""
    o = DetectOptions()
    if unit == "bytes":
        return r >= (o.min_bytes_per_step if per == "step" else o.min_bytes_per_s)
    return r >= (o.min_count_per_step if per == "step" else o.min_count_per_s)


def _tracked(p: Process, signal: str) -> bool:
    """Whether ``p`` recorded the family of ``signal`` (``container:...``, ``objects:...``).

    Census signals are written only for what grows: when ``p`` ran a census that
    looks at this family (or recorded another member of it) but has no such
    series, the member did not grow in ``p``.
    """
    family, sep, _ = signal.partition(":")
    if not sep:
        return False
    if any(n.startswith(family + ":") for n in p.series):
        return True
    key = _CENSUS_KEYS.get(family)
    return key is not None and any(isinstance(c, dict) and key in c for c in p.census)


def _match_findings(
    before: RunRecord,
    after: RunRecord,
    matches: List[ProcessMatch],
    signals: List[SignalDiff],
    per: str,
    options: CompareOptions,
) -> List[FindingDiff]:
    label_b = {m.before.pid: m.label for m in matches if m.before}
    label_a = {m.after.pid: m.label for m in matches if m.after}
    sig = {(s.process, s.signal): s for s in signals}

    def key(f: Finding, labels: Dict[int, str]) -> Tuple[str, str, str]:
        return (labels.get(f.pid, "?") if f.pid is not None else "run", f.signal, f.kind)

    def culprit(f: Finding) -> Tuple[Optional[str], Optional[str]]:
        t, h = f.culprit_type, f.holder
        return (None if t is None else str(t), None if h is None else str(h))

    def status(fb: Optional[Finding], fa: Optional[Finding], proc: str, signal: str) -> str:
        s = sig.get((proc, signal))
        if (
            s is not None
            and s.before is not None
            and s.after is not None
            and s.before.verdict is not None
            and s.after.verdict is not None
        ):
            return s.status  # the signal's own fits, with their intervals
        if s is not None and s.note.startswith("not recorded"):
            return s.status  # a census signal that stopped (or started) growing
        if fb is not None and fa is not None:
            return _status(as_fit(fb), as_fit(fa), per, options)[0]
        if fb is not None:
            gone = s is None or s.after is None
            return "not_compared" if gone else "fixed" if fb.verdict == "leak" else "same"
        return "new" if fa is not None and fa.verdict == "leak" else "same"

    remaining = list(after.findings)
    out: List[FindingDiff] = []
    for fb in before.findings:
        kb = key(fb, label_b)
        fa = _counterpart(fb, kb[0], [(f, key(f, label_a)[0]) for f in remaining], culprit)
        if fa is not None:
            remaining.remove(fa)
        t, h = culprit(fa or fb)
        st = status(fb, fa, kb[0], fb.signal)
        out.append(FindingDiff(kb[0], fb.signal, fb.kind, t, h, per, fb, fa, st))
    for fa in remaining:
        t, h = culprit(fa)
        ka = key(fa, label_a)
        st = status(None, fa, ka[0], fa.signal)
        out.append(FindingDiff(ka[0], fa.signal, fa.kind, t, h, per, None, fa, st))
    return out


def _counterpart(
    fb: Finding,
    process: str,
    candidates: List[Tuple[Finding, str]],
    culprit: Callable[[Finding], Tuple[Optional[str], Optional[str]]],
) -> Optional[Finding]:
    """The after run's finding that is ``fb`` again, in the same process and of its kind:
    the same culprit (holder and type) and leading signal; else the same culprit sharing
    any of its signals (the lead may differ between runs); else the same leading signal;
    else any finding sharing one of its signals."""
    same = [fa for fa, proc in candidates if proc == process and fa.kind == fb.kind]
    named = culprit(fb)
    mine = set(fb.signals or [fb.signal])

    def shares(fa: Finding) -> bool:
        return bool(mine & set(fa.signals or [fa.signal]))

    def ours(fa: Finding) -> bool:
        return named[1] is not None and culprit(fa) == named

    for test in (
        lambda fa: ours(fa) and fa.signal == fb.signal,
        lambda fa: ours(fa) and shares(fa),
        lambda fa: fa.signal == fb.signal,
        shares,
    ):
        found = [fa for fa in same if test(fa)]
        if found:
            return found[0]
    return None
