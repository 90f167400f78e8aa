"""What a culprit is, and how one is made from a census profile (see culprit.py)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Tuple, cast

from memprobe.analysis.census import Container, Profile, as_list, num
from memprobe.record import Culprit as RecordCulprit
from memprobe.record import Evidence

TENSOR = "torch.Tensor"


@dataclass(frozen=True)
class Culprit:
    """What one finding is blamed on."""

    type: Optional[str]
    holder: Optional[str]
    location: Optional[str]
    holds_autograd_graph: bool
    pattern: str
    fix_hint: Optional[str]
    sentence: str
    evidence: Evidence = field(default_factory=lambda: Evidence())

    def as_dict(self) -> RecordCulprit:
        return {
            "type": self.type,
            "holder": self.holder,
            "location": self.location,
            "holds_autograd_graph": self.holds_autograd_graph,
        }


def evidence_of(**kw: Any) -> Evidence:
    """Evidence from keyword figures (the keys are Evidence's; floats rounded, Nones left out)."""
    return cast(
        Evidence,
        {k: (round(v, 4) if isinstance(v, float) else v) for k, v in kw.items() if v is not None},
    )


def classes_text(owners: List[str]) -> str:
    """ "`TrainingDashboard.ax_attn` › `Axes._children`": the classes whose attributes a
    holder's path reads, where the variables' names may say little (``main:prof.records``);
    "" for none."""
    return " › ".join(f"`{o}`" for o in owners)


def classes_after(owners: List[str]) -> str:
    """ " (`RolloutBuffer.logp`)" after a holder that is not a container's (a graph holder,
    a chain's head); "" for none."""
    return f" ({classes_text(owners)})" if owners else ""


def make_culprit(
    prof: Profile,
    type_name: Optional[str],
    holder: Optional[str],
    graph: bool,
    pattern: str,
    hint: Optional[str],
    sentence: str,
    ev: Evidence,
    box: Optional[Container],
) -> Culprit:
    location, traceback = user_location(prof)
    evidence: Evidence = {"pattern": pattern}
    if type_name:
        evidence["growing_type"] = type_name
    evidence.update(ev)
    if box is not None and box.chain:
        evidence["chain"] = list(box.chain)
    if box is not None and box.bytes is not None:
        evidence["container_bytes"] = box.bytes
    if box is not None and box.owners and holder == box.holder:
        evidence["holder_types"] = list(box.owners)
    if traceback:
        evidence["allocated_at"] = traceback
    evidence["censuses"] = prof.n
    return Culprit(
        type=type_name,
        holder=holder,
        location=location,
        holds_autograd_graph=graph,
        pattern=pattern,
        fix_hint=hint,
        sentence=sentence,
        evidence=evidence,
    )


def held_by(c: Culprit, holder: str, said: str, hint: str, more: Evidence) -> Culprit:
    """``c`` named by a holder found outside the census' walk from the roots (a chain of
    closures, generators or objects; atexit's table): its sentence goes on with what was
    found, its fix is that holder's."""
    evidence: Evidence = {**c.evidence, **more}
    return replace(
        c, holder=holder, sentence=f"{c.sentence} {said}", fix_hint=hint, evidence=evidence
    )


def user_location(prof: Profile) -> Tuple[Optional[str], List[str]]:
    """The user's line that allocated most of what survived the tracemalloc windows, and
    its traceback."""
    by_line: Dict[str, Tuple[float, List[str]]] = {}
    for w in prof.windows:
        for tb in as_list(w.get("tracebacks")):
            if not isinstance(tb, dict) or not isinstance(tb.get("user_line"), str):
                continue
            size = num(tb.get("size")) or 0.0
            frames = [str(f) for f in as_list(tb.get("traceback"))][:8]
            old = by_line.get(tb["user_line"], (0.0, frames))
            by_line[tb["user_line"]] = (old[0] + size, old[1])
        if not by_line:
            for line in as_list(w.get("top")):
                if (
                    isinstance(line, dict)
                    and line.get("user")
                    and isinstance(line.get("line"), str)
                ):
                    by_line.setdefault(line["line"], (num(line.get("size")) or 0.0, []))
    if not by_line:
        return None, []
    best = max(by_line.items(), key=lambda kv: kv[1][0])
    return best[0], best[1][1]
