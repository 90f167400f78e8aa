"""One finding per culprit, with every signal that backs it and what it holds.

The analysis judges signals one by one, so one leak (``main:losses`` gaining a
loss tensor per step) shows as several leak findings: the container's length,
the tensors that hold graphs, the tensor count, RSS, USS. A person wants one:
the culprit, the signals that grow with it, how much memory it holds now and at
the projected limit, the fix. Pure: findings in, findings out.

Leak findings of one process are grouped by culprit (its holder, else its
pattern and type). Findings without a culprit (memory that grows, nothing
named) join the culprit when the process has exactly one: that memory is what
the culprit holds. The group's leading finding is its memory signal where it
has one (the projection to the limit comes from memory), else its first.

What it holds now (``retained_bytes``) is the larger of the bytes the agent
measured in the container's items and, when this culprit is the process' only
one, the growth of the process' memory since the leak began (which also counts
what autograd graphs keep in C++, invisible to the item sizes).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from memprobe.analysis.findings import rate_text_of
from memprobe.analysis.hints import (
    HINT_NATIVE,
    HINT_NATIVE_BUFFER,
    HINT_PROFILER,
    HINT_SQLITE,
    HINT_STRING,
)
from memprobe.analysis.native import Handle
from memprobe.analysis.series import TREE_USS, container_holder, family_of
from memprobe.analysis.siblings import Family, family_bytes, join_siblings, name_family
from memprobe.analysis.wording import fmt_bytes, fmt_count
from memprobe.record import Culprit, Evidence, Finding, RunRecord

__all__ = ["group_findings"]

_FAMILY_ORDER = {"memory": 0, "object": 1, "heap": 2}
_MEMORY_ORDER = ("uss_bytes", "rss_bytes", "pss_bytes")  # what the OS charges the process
# the device's memory that a process holds: its allocator's tensors, the driver's view of it
_DEVICE_MEMORY = re.compile(r"^(cuda:\d+/allocated_bytes|nvml:\d+/used_bytes)$")


def group_findings(
    findings: List[Finding],
    looked: Iterable[Optional[int]] = (),
    handles: Optional[Mapping[int, Handle]] = None,
) -> List[Finding]:
    """Merge the leak findings that name the same culprit; others pass through.
    ``looked``: the processes whose censuses looked at their objects more than once (where
    nothing growing among them says something: see ``_outside_python``). ``handles``: per
    process, the handle on memory outside Python's objects that grew (``native.py``)."""
    seen = set(looked)
    leaks = [f for f in findings if f.kind == "leak" and f.verdict == "leak"]
    tree = [_merge([f], True) for f in leaks if f.signal == TREE_USS]  # its own (tree.py)
    leaks = [f for f in leaks if f.signal != TREE_USS]
    rest = [f for f in findings if not (f.kind == "leak" and f.verdict == "leak")]
    by_pid: Dict[Optional[int], List[Finding]] = {}
    for f in leaks:
        by_pid.setdefault(f.pid, []).append(f)
    out: List[Finding] = []
    for members in by_pid.values():
        named: Dict[str, List[Finding]] = {}
        typed: Dict[Tuple[str, ...], List[Finding]] = {}
        loose: List[Finding] = []
        for f in members:
            key = _key(f)
            if key is None:
                loose.append(f)
            elif key[0] == "holder":
                named.setdefault(key[1], []).append(f)
            else:
                typed.setdefault(key, []).append(f)
        _join_watches(named)
        families = join_siblings(named)  # one container per layer, one hook dict per param
        groups: List[List[Finding]] = list(named.values())
        # what the program watches itself (memprobe.watch) is a finding of its own, named as
        # the program named it; the census' one holder still takes the memory signals
        hosts = [h for h, g in named.items() if not _watched(g)] or list(named)
        if len(hosts) == 1:
            groups = [named[hosts[0]]] + [g for h, g in named.items() if h != hosts[0]]
            # views of the same leak without a holder (the tensors the items hold, the
            # memory they take) join the one the process names
            groups[0].extend(f for g in typed.values() for f in g)
            groups[0].extend(loose)
            typed, loose = {}, []
        pid = members[0].pid
        handle = (handles or {}).get(pid) if pid is not None and pid in seen else None
        typed_only: Optional[List[Finding]] = None
        if not named and typed:
            # no holder named: one culprit, led by its most specific pattern (a handle that
            # explains the climb names it: a bare type is no holder)
            typed_only = sorted((f for g in typed.values() for f in g), key=_pattern_rank)
            groups.append(typed_only + loose)
            typed, loose = {}, []
        groups.extend(typed.values())
        sole = len(groups) == 1
        of = {id(named[h]): fam for h, fam in families.items() if h in named}
        for g in groups:
            on_own = typed_only is not None and g[0] is typed_only[0] and sole
            out.append(_merge(g, sole, of.get(id(g)), native=on_own, handle=handle))
        if loose:
            native = not groups and pid in seen
            out.append(_merge(loose, not groups, native=native, handle=handle))
    return out + tree + rest


# the pattern that explains the others best first: models hold tensors, figures and
# arrays hold bytes, graphs hold tensors, a type count explains least
_PATTERNS = (
    "graph carried across steps",
    "retained graphs",
    "models kept",
    "figures",
    "ndarray",
    "unbounded container",
    "tensors kept",
    "objects",
)


def _join_watches(named: Dict[str, List[Finding]]) -> None:
    """A watched object the census also names (``memprobe.watch("history", env.history)``
    and ``train.py:main:env.history``) is one leak: its watch findings join that holder."""
    census = [h for h, g in named.items() if not _watched(g)]
    for name in [h for h, g in named.items() if _watched(g)]:
        same = [h for h in census if h == name or h.endswith((":" + name, "." + name))]
        if len(same) == 1:
            named[same[0]].extend(named.pop(name))


def _watched(group: List[Finding]) -> bool:
    return all(f.evidence.get("pattern") == "watched object" for f in group)


def _pattern_rank(f: Finding) -> int:
    pattern = f.evidence.get("pattern")
    return _PATTERNS.index(pattern) if pattern in _PATTERNS else len(_PATTERNS)


def _key(f: Finding) -> Optional[Tuple[str, ...]]:
    holder, type_name = f.holder, f.culprit_type
    if isinstance(holder, str) and holder:
        return ("holder", holder)
    pattern = f.evidence.get("pattern")
    if isinstance(pattern, str) and isinstance(type_name, str):
        return ("type", pattern, type_name)
    return None


def _rank(f: Finding) -> Tuple[int, int, float]:
    fam = family_of(f.signal)
    mem = _MEMORY_ORDER.index(f.signal) if f.signal in _MEMORY_ORDER else len(_MEMORY_ORDER)
    return (_FAMILY_ORDER.get(fam, 9), mem, -f.confidence)


def _merge(
    members: List[Finding],
    sole: bool,
    family: Optional[Family] = None,
    native: bool = False,
    handle: Optional[Handle] = None,
) -> Finding:
    best = min((f for f in members if f.culprit), key=_culprit_rank, default=None)
    members = sorted(members, key=_rank)
    lead = _lead(members)
    members = [lead] + [f for f in members if f is not lead]
    named = best
    signals = [f.signal for f in members]
    evidence: Evidence = {}
    for f in reversed(members):  # the lead's own figures win
        evidence.update(f.evidence)
    evidence["signals"] = {f.signal: _rate(f) for f in members}
    # what the named holder's items take (a family of siblings: counted once, see siblings.py)
    direct = (
        family_bytes(family)
        if family is not None
        else named.evidence.get("container_bytes")
        if named is not None
        else None
    )
    retained = _retained(members, direct, sole)
    at_oom = _at_oom(lead, retained)
    outside = native and named is None and _outside_python(members)
    # the handle names memory outside Python's objects; one that explains the climb names
    # it too where Python's own heap grows beside (spools of records written from lists),
    # or where only a type without a holder was seen growing (that type is then no culprit)
    growth = lead.evidence.get("growth")
    explains = handle is not None and handle.explains(float(growth or 0.0)) and bool(growth)
    unnamed = named is None or named.culprit is None or not named.culprit.get("holder")
    owner = handle if native and unnamed and (outside or explains) else None
    if owner is not None:
        named = None
    text = _text(lead, named, members, retained)
    culprit = named.culprit if named else lead.culprit
    hint = HINT_NATIVE if outside else None
    if outside:
        text += " " + _OUTSIDE_PYTHON
    if owner is not None:  # the handle is the culprit, with its hint
        text += " " + _handle_text(owner, outside)
        culprit = Culprit(
            type=owner.type, holder=owner.holder, location=None, holds_autograd_graph=False
        )
        hint = {"rows": HINT_SQLITE, "recording": HINT_PROFILER}.get(
            owner.unit, HINT_STRING if owner.type in ("str", "bytes") else HINT_NATIVE_BUFFER
        )
    else:
        hint = (named.fix_hint if named else None) or lead.fix_hint or hint
    merged = dataclasses.replace(
        lead,
        culprit=culprit,
        fix_hint=hint,
        confidence=max(f.confidence for f in members),
        evidence=evidence,
        explanation=text,
        signals=signals,
        retained_bytes=retained,
        retained_bytes_at_oom=at_oom,
    )
    return merged if family is None else name_family(merged, family)


def looked_at(record: RunRecord) -> List[Optional[int]]:
    """The processes whose censuses looked at their objects at least twice."""
    return [p.pid for p in record.processes if sum(1 for c in p.census if "types" in c) >= 2]


_OUTSIDE_PYTHON = (
    "Nothing Python counts grows with it: no object type, no container, not Python's own "
    "allocator (`py_alloc_blocks`). The memory is taken outside Python's objects, by a C "
    "library or extension the program calls, or by a few objects growing in place; "
    "memprobe cannot look inside it."
)


def _handle_text(handle: Handle, after_outside: bool = True) -> str:
    """What the handle did; ``after_outside``: said after ``_OUTSIDE_PYTHON``."""
    which = (
        "Of the handles on such memory the program holds,"
        if after_outside
        else "Of the handles on memory outside Python's objects the program holds,"
    )
    if handle.unit == "recording":
        return (
            f"{which} `{handle.holder}` (a {handle.type}) was recording at "
            f"{handle.grown:.0f} censuses in a row, from the first that saw it: a profiler "
            "keeps every op it records in its own buffers until it is stopped."
        )
    what = (
        f"changed {fmt_count(handle.grown)} rows"
        if handle.unit == "rows"
        else f"grew by {fmt_bytes(handle.grown)}"
    )
    return (
        f"{which} `{handle.holder}` (a {handle.type}) {what} between the first and the last "
        f"of {handle.censuses} censuses."
    )


def _outside_python(members: List[Finding]) -> bool:
    """The process' only leak is memory alone: no member counts objects, containers or
    Python's heap blocks, and none names a type."""
    return all(family_of(f.signal) == "memory" and not f.culprit for f in members)


def _lead(members: List[Finding]) -> Finding:
    """The first by rank, unless a GPU memory signal of the group reaches its limit sooner:
    a device tensor kept per step grows the device by its size and the host by its Python
    object, and the run dies of whichever fills first."""
    first = members[0]
    if family_of(first.signal) != "memory":
        return first
    # the allocator's view names the tensors; the driver's (NVML) only where it is missing
    device = [f for f in members if f.projected_oom and _DEVICE_MEMORY.match(f.signal)]
    device = [f for f in device if f.signal.startswith("cuda:")] or device
    soonest = min(device, key=_oom_order, default=None)
    if soonest is None or (first.projected_oom and _oom_order(first) <= _oom_order(soonest)):
        return first
    return soonest


def _oom_order(f: Finding) -> Tuple[float, float]:
    """When the finding's projection reaches the limit: seconds first, then the step."""
    proj = f.projected_oom or {}
    t_s, step = proj.get("t_s"), proj.get("step")
    inf = float("inf")
    return (
        float(t_s) if isinstance(t_s, (int, float)) else inf,
        float(step) if isinstance(step, (int, float)) else inf,
    )


def _culprit_rank(f: Finding) -> Tuple[int, int]:
    """The culprit a merged finding names: one with a holder, then the best pattern."""
    return (0 if f.holder else 1, _pattern_rank(f))


def _rate(f: Finding) -> str:
    return rate_text_of(f.slope_per_step, f.slope_per_s, f.unit)


def _retained(members: List[Finding], direct: object, sole: bool) -> Optional[float]:
    """``direct``: the bytes the agent measured in the culprit's items, if any."""
    best = float(direct) if isinstance(direct, (int, float)) and direct > 0 else None
    whole = _held_now(members)
    if best is not None and whole is not None and best > whole:
        # a sampled size above all the process holds is no size: a big object shared by
        # many items (an lru_cache's ``self`` in every key) was counted once per sample
        best = None
    if sole:
        # what the process' memory gained since the leak began, host and device added
        host = _growth(f for f in members if f.signal in _MEMORY_ORDER)
        device = sum(_growth([f]) or 0.0 for f in members if _allocated_on_device(f))
        if host is not None or device:
            best = max(best or 0.0, (host or 0.0) + device)
    return best


def _held_now(members: List[Finding]) -> Optional[float]:
    """All the process holds at the end, host memory and device memory added (None when
    no memory signal is among the members)."""
    host = [_last_value(f) for f in members if f.signal in _MEMORY_ORDER]
    known = [v for v in host if v is not None]
    if not known:
        return None
    return max(known) + sum(_last_value(f) or 0.0 for f in members if _allocated_on_device(f))


def _allocated_on_device(f: Finding) -> bool:
    """The device allocator's own memory (``cuda:N/allocated_bytes``)."""
    return f.signal.startswith("cuda:") and _DEVICE_MEMORY.match(f.signal) is not None


def _last_value(f: Finding) -> Optional[float]:
    v = f.evidence.get("last_value")
    return float(v) if isinstance(v, (int, float)) and v > 0 else None


def _growth(members: Iterable[Finding]) -> Optional[float]:
    growths = [f.evidence.get("growth") for f in members if f.unit == "bytes"]
    return max((float(g) for g in growths if isinstance(g, (int, float)) and g > 0), default=None)


def _at_oom(lead: Finding, retained: Optional[float]) -> Optional[float]:
    proj = lead.projected_oom
    if retained is None or not proj or lead.unit != "bytes":
        return None
    window = lead.evidence.get("window")
    x_end = window[1] if isinstance(window, list) and len(window) == 2 else None
    t_end = lead.evidence.get("t_end")
    more: Optional[float] = None
    step, t_s = proj.get("step"), proj.get("t_s")
    if lead.slope_per_step is not None and isinstance(step, (int, float)) and x_end is not None:
        more = lead.slope_per_step * max(0.0, float(step) - float(x_end))
    elif lead.slope_per_s is not None and isinstance(t_s, (int, float)) and t_end is not None:
        more = lead.slope_per_s * max(0.0, float(t_s) - float(t_end))
    return None if more is None else retained + more


def _text(
    lead: Finding, named: Optional[Finding], members: List[Finding], retained: Optional[float]
) -> str:
    if named is None and len(members) == 1:
        return lead.explanation
    parts: List[str] = []
    if named is not None:
        parts.append(str(named.evidence.get("culprit_sentence") or named.explanation))
        watches = sorted({str(f.evidence.get("watch")) for f in members if f.evidence.get("watch")})
        if watches and not _watched([named]):
            parts.append("Watched as " + ", ".join(f"`{w}`" for w in watches) + ".")
    if retained is not None and named is not None:
        parts.append(f"It holds ≈ {fmt_bytes(retained)} now.")
    elif retained is not None:
        parts.append(f"≈ {fmt_bytes(retained)} has built up so far.")
    own = lead.evidence.get("signal_sentence") if lead.culprit else lead.explanation
    if isinstance(own, str) and own:
        parts.append(own)
    others = [f for f in members if f is not lead]
    if others:
        grows = ", ".join(f"{_label(f.signal)} {_rate(f)}" for f in others[:4])
        more = f" and {len(others) - 4} more" if len(others) > 4 else ""
        parts.append(f"Growing with it: {grows}{more}.")
    return " ".join(parts)


def _label(signal: str) -> str:
    if signal.startswith("watch:"):
        name, _, what = signal[len("watch:") :].rpartition(":")
        return f"watched `{name}`" + (" length" if what == "len" else "")
    holder = container_holder(signal)
    if holder is not None:
        return f"`{holder}` length"
    if signal.startswith("graph:held_by:"):
        return f"graph-holding items of `{signal[len('graph:held_by:') :]}`"
    return signal
