"""Which process of one run is which process of the other (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

from memprobe.record import Process

__all__ = ["ProcessMatch", "match_processes"]


@dataclass(frozen=True)
class ProcessMatch:
    label: str
    before: Optional[Process]
    after: Optional[Process]
    how: str  # "role" | "order" | "unmatched"


def _key(p: Process) -> Tuple[str, Optional[int], Optional[int], Optional[int]]:
    return (p.role, p.node, p.rank, p.worker_id)


def match_processes(before: List[Process], after: List[Process]) -> List[ProcessMatch]:
    used_a: Set[int] = set()
    pairs: List[Tuple[Process, Optional[Process], str]] = []
    for pb in before:  # same role/rank/worker id, in order of appearance
        for i, pa in enumerate(after):
            if i not in used_a and _key(pa) == _key(pb):
                used_a.add(i)
                pairs.append((pb, pa, "role"))
                break
        else:
            pairs.append((pb, None, "unmatched"))
    rest = [pa for i, pa in enumerate(after) if i not in used_a]
    out: List[ProcessMatch] = []
    seen: Dict[str, int] = {}
    for pb, pm, how in pairs:
        if pm is None and rest:  # then by order
            pm, how = rest.pop(0), "order"
        out.append(ProcessMatch(_label(pm if pm is not None else pb, seen), pb, pm, how))
    for pr in rest:
        out.append(ProcessMatch(_label(pr, seen), None, pr, "unmatched"))
    return out


def _label(p: Process, seen: Dict[str, int]) -> str:
    base = p.label
    seen[base] = seen.get(base, 0) + 1
    return base if seen[base] == 1 else f"{base} #{seen[base]}"
