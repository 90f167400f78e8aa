"""Name the culprit of each leak finding: what grows, who holds it, where it is allocated.

Pure: a run record's census payloads (written by the agent's census, see
``memprobe/bootstrap/memprobe_agent/censustaker.py``) and the findings in,
findings with ``culprit``, ``evidence`` and a pattern's fix hint out. The
patterns are DESIGN.md's table: retained autograd graphs, state never
detached, unbounded containers, models kept alive, figures never closed,
NumPy temporaries kept. Non-leak findings pass through untouched.

Which pattern explains a growing signal, and the patterns other than the tensor ones, are
in ``culprit_patterns.py``; the tensor patterns (graphs retained or carried, a growing
tensor, tensors kept) in ``culprit_tensors.py``; what a culprit is and how one is made, in
``culprit_make.py``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from memprobe.analysis.census import Profile
from memprobe.analysis.census_build import build_profile, series_lengths
from memprobe.analysis.culprit_closures import with_closure_chain
from memprobe.analysis.culprit_make import Culprit
from memprobe.analysis.culprit_outside import with_atexit
from memprobe.analysis.culprit_patterns import culprit_for, primary
from memprobe.analysis.hints import HINT_CONTAINER
from memprobe.analysis.holderline import grow_line
from memprobe.analysis.phases import census_after_steps
from memprobe.analysis.series import TREE_USS, container_holder, step_clock
from memprobe.analysis.wording import fmt_count
from memprobe.record import Evidence, Finding, Process, RunRecord

__all__ = ["Culprit", "attribute", "culprit_for", "live_culprit", "watch_name"]


def attribute(
    record: RunRecord,
    findings: List[Finding],
    verdicts: Optional[Mapping[Tuple[int, str], Any]] = None,
) -> List[Finding]:
    """Fill culprit, evidence and fix hint of every leak finding a census can explain.

    ``verdicts`` (the analysis' per-signal verdicts) keep a container from being blamed
    when its own length series says it stopped growing (a registry filled at start-up).
    """
    profiles: Dict[Optional[int], Profile] = {}
    # a stepping process' phase after its last step, judged on seconds (phases.py): its
    # findings are explained by the censuses of that phase
    after: Dict[Optional[int], Profile] = {}
    for proc in record.processes:
        active = _active_holders(proc.pid, verdicts) if verdicts is not None else None
        settled = _settled_types(proc.pid, verdicts) if verdicts is not None else None
        stepped = (
            sum(1 for c in proc.census if isinstance(c, dict) and isinstance(c.get("step"), int))
            >= 2
        )
        lengths = series_lengths(proc.series, stepped)
        clock = step_clock(proc.series) if stepped else None
        profiles[proc.pid] = build_profile(proc.census, active, lengths, settled, clock)
        tail = census_after_steps(proc) if stepped else None
        if tail is not None:
            after[proc.pid] = build_profile(
                tail, active, series_lengths(proc.series, False), settled
            )
    by_pid = {proc.pid: proc for proc in record.processes}
    out: List[Finding] = []
    sources = _user_sources(record)
    for f in findings:
        prof = profiles.get(f.pid)
        v = verdicts.get((f.pid, f.signal)) if verdicts is not None and f.pid else None
        if f.pid in after and getattr(v, "axis", None) == "time":
            prof = after[f.pid]
        leak = f.verdict == "leak" and f.kind == "leak"
        if f.signal == TREE_USS:  # processes kept alive: no census of one process explains it
            out.append(f)
            continue
        if leak and watch_name(f.signal) is not None:
            c: Optional[Culprit] = _watched(f.signal, by_pid.get(f.pid) if f.pid else None)
        else:
            c = culprit_for(f.signal, prof) if leak and prof else None
            c = with_atexit(with_closure_chain(c, prof), prof) if leak and prof else c
        if c is None:
            out.append(f)
            continue
        # the line that keeps it (the append, the +=) over the line that allocated it
        kept_at = grow_line(c.holder, sources) if c.holder else None
        if kept_at is not None:
            c = dataclasses.replace(c, location=kept_at)
        explanation = c.sentence + (" " + f.explanation if f.explanation else "")
        parts: Evidence = {"culprit_sentence": c.sentence, "signal_sentence": f.explanation}
        out.append(
            dataclasses.replace(
                f,
                culprit=c.as_dict(),
                evidence={**c.evidence, **f.evidence, **parts},
                fix_hint=c.fix_hint or f.fix_hint,
                explanation=explanation,
            )
        )
    return out


def _user_sources(record: RunRecord) -> List[str]:
    """The Python files the run's command lines name and its tracemalloc windows saw as
    the user's (absolute, existing), where a holder's growing line is looked for."""
    cwd = record.cwd or "."
    names: List[str] = []
    for argv in [record.command] + [p.argv for p in record.processes]:
        names.extend(a for a in argv or [] if isinstance(a, str) and a.endswith(".py"))
    for proc in record.processes:
        for c in proc.census:
            window = c.get("tracemalloc") if isinstance(c, dict) else None
            top = window.get("top") if isinstance(window, dict) else None
            for line in top if isinstance(top, list) else []:
                if (
                    isinstance(line, dict)
                    and line.get("user")
                    and isinstance(line.get("file"), str)
                ):
                    names.append(line["file"])
    out: List[str] = []
    for name in names:
        path = os.path.normpath(os.path.join(cwd, name))
        if path not in out and os.path.isfile(path):
            out.append(path)
    return out


def _active_holders(pid: int, verdicts: Mapping[Tuple[int, str], Any]) -> Set[str]:
    """Holders whose length series keeps rising: a leak, or rising at the detector's
    confidence without having stopped (a container gaining a model every forty steps is
    under the item count that is a leak on its own, yet it is the holder; a registry
    that filled at start-up has stopped)."""
    out: Set[str] = set()
    for (p, signal), v in verdicts.items():
        holder = container_holder(signal) if p == pid else None
        if holder is not None and _still_rising(v):
            out.add(holder)
    return out


def _still_rising(v: Any) -> bool:
    """A leak, or rising at the detector's confidence without having stopped."""
    return bool(v.verdict == "leak" or (v.ci_low > 0 and not v.plateau))


def _settled_types(pid: int, verdicts: Mapping[Tuple[int, str], Any]) -> Set[str]:
    """Types whose dense live count (``objects:<type>``) has stopped rising: the censuses
    saw them grow, but only while something filled (a replay buffer up to its ``maxlen``);
    memory that grows later is not theirs."""
    out: Set[str] = set()
    for (p, signal), v in verdicts.items():
        if p != pid or not signal.startswith("objects:"):
            continue
        if not _still_rising(v):
            out.add(signal[len("objects:") :])
    return out


WATCHED = "watched object"


def watch_name(signal: str) -> Optional[str]:
    """The name given to ``memprobe.watch`` in a ``watch:<name>:bytes|len`` signal."""
    if not signal.startswith("watch:"):
        return None
    return signal[len("watch:") :].rsplit(":", 1)[0]


def _watched(signal: str, proc: Optional[Process]) -> Culprit:
    """A watched object is its own culprit, named as the program named it."""
    name = watch_name(signal) or "?"
    series = proc.series.get(f"watch:{name}:bytes") if proc is not None else None
    evidence: Evidence = {"pattern": WATCHED, "watch": name}
    if series is not None and series.value:
        evidence["container_bytes"] = series.value[-1]
    return Culprit(
        type=None,
        holder=name,
        location=None,
        holds_autograd_graph=False,
        pattern=WATCHED,
        fix_hint=HINT_CONTAINER,
        sentence=f"`{name}` is watched (memprobe.watch).",
        evidence=evidence,
    )


_INTERPRETER_HOLDERS = ("sys.path_importer_cache", "sys.modules", "sys.path_hooks")


def live_culprit(process_census: Sequence[Dict[str, Any]]) -> Optional[str]:
    """One short line for the live table: the top growing thing and its holder, or None."""
    prof = build_profile(process_census)
    c = primary(prof) if prof.n >= 2 else None
    if c is None or (c.holder or "").startswith(_INTERPRETER_HOLDERS):
        return None  # the import system's caches fill while a program imports
    graph = ", holds autograd graphs" if c.holds_autograd_graph else ""
    rate = c.evidence.get("per_step")
    what = f"{c.type}" if c.type else "objects"
    grows = isinstance(rate, (int, float)) and rate > 0
    grow = f" +{fmt_count(rate)} {what}/{prof.per}" if grows else f" {what}"
    return f"{c.holder or '?'}{grow}{graph}"
