"""Holders that are parts of one culprit: one finding, not one per part.

A leak often grows several containers side by side: one list per layer in a dict of
activation statistics (``monitor.act_stats['1']``, ``['3']``, ``['5']``…), one hook
dict per parameter (``opt.param_groups[0]['params'][k]._backward_hooks``), the two
call lists of one mock (``spy._mock_mock_calls`` and ``spy._mock_call_args_list``).
Judged one by one, each is a finding with the same text; a person sees one thing to
fix. Two kinds of family, read from the holder's chain (root, then ``.attr`` and
``[key]`` steps):

- items of one container: the same chain with only subscripts differing, whatever
  they gain (a registry of series, one per key, each growing at its own pace). Named
  with a ``[*]`` where the members differ (``monitor.act_stats[*]``), the same in every
  run whichever key the census happened to see first;
- attributes of one object below the root (not two variables of one frame or one
  module: those are two things to fix) that gain the same type at the same pace
  (within ``PACE_RATIO``): named by the member that leads.

Pure: findings in, findings out.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple, cast

from memprobe.analysis.wording import fmt_count
from memprobe.record import Culprit, Finding

__all__ = ["Family", "join_siblings", "name_family"]

PACE_RATIO = 2.0  # attributes of one object growing within this factor of each other
_SHOWN = 4  # members named in the sentence, the rest counted


@dataclasses.dataclass
class Family:
    name: str  # the holder the merged finding names
    kind: str  # "items" | "attrs"
    members: List[str]  # holder paths, the leading one first
    chains: List[List[str]]
    bytes_each: List[float]  # container_bytes of each member (0 when unknown)


def join_siblings(named: Dict[str, List[Finding]]) -> Dict[str, Family]:
    """Merge, in ``named`` (holder -> its findings), the holders that are parts of one
    culprit under the first of them; returns {that holder: its family}."""
    buckets: Dict[Tuple[str, ...], List[str]] = {}
    for holder, group in named.items():
        key = _key(group)
        if key is not None:
            buckets.setdefault(key, []).append(holder)
    families: Dict[str, Family] = {}
    for key, holders in buckets.items():
        if key[0] == "attrs":
            holders = _same_pace(holders, named)
        if len(holders) < 2:
            continue
        holders.sort(key=lambda h: -_bytes(named[h]))  # the biggest leads
        chains = [_chain_of(named[h]) or [] for h in holders]
        lead = holders[0]
        name = _wildcard(chains) if key[0] == "items" else lead
        families[lead] = Family(name, key[0], holders, chains, [_bytes(named[h]) for h in holders])
        for other in holders[1:]:
            named[lead].extend(named.pop(other))
    for lead, family in families.items():
        if family.kind == "items":
            _join_strays(lead, family, named, families)
    return families


def _join_strays(
    lead: str, family: Family, named: Dict[str, List[Finding]], families: Dict[str, Family]
) -> None:
    """One more member of an items family that the census reached by another path: the
    same object's hook dict named through ``model._modules['emb']._parameters['weight']``
    where its six siblings were named through ``opt.param_groups[0]['params'][k]``. It
    joins when it hangs below a variable of the same frame or module by the same last
    attribute, holds the same type and grows at the family's pace; a holder in a family of
    its own stays apart."""
    tail = family.chains[0][-1]
    if not tail.startswith(".") or len(family.chains[0]) < 3:
        return
    kind = _kind(named[lead])
    pace = _pace(named[lead])
    if pace is None:
        return
    for holder in list(named):
        if holder == lead or holder in families:
            continue
        chain = _chain_of(named[holder])
        other = _pace(named[holder])
        if (
            chain is None
            or len(chain) < 3
            or _scope(chain[0]) != _scope(family.chains[0][0])
            or chain[-1] != tail
            or other is None
            or max(pace, other) > PACE_RATIO * min(pace, other)
            or _kind(named[holder]) != kind
        ):
            continue
        family.members.append(holder)
        family.chains.append(chain)
        family.bytes_each.append(_bytes(named[holder]))
        named[lead].extend(named.pop(holder))


def name_family(merged: Finding, family: Family) -> Finding:
    """The merged finding of a family: named by the family, its text saying which parts
    grow, what they hold counted once (items: their sum; attributes of one object may
    share what they hold: the largest)."""
    culprit = dict(merged.culprit or {})
    culprit["holder"] = family.name
    parts = [_step(c, family.chains[0]) for c in family.chains[1:]]
    shown = ", ".join(f"`{p}`" for p in parts[:_SHOWN])
    more = f" and {fmt_count(len(parts) - _SHOWN)} more" if len(parts) > _SHOWN else ""
    if family.kind == "items":
        sentence = (
            f"So do {fmt_count(len(parts))} more like it in the same container: "
            f"{shown}{more} ({fmt_count(len(family.members))} in all)."
        )
    else:
        does = "So does" if len(parts) == 1 else "So do"
        sentence = f"{does} {shown}{more} beside it, on the same object."
    evidence = merged.evidence.copy()
    evidence["siblings"] = list(family.members)
    text = merged.explanation
    first = text.find(". ")
    text = text[: first + 1] + " " + sentence + text[first + 1 :] if first >= 0 else text
    return dataclasses.replace(
        merged,
        culprit=cast(Culprit, culprit),
        evidence=evidence,
        explanation=text,
    )


def family_bytes(family: Family) -> Optional[float]:
    """What the family holds, counted once (see ``name_family``); None when unknown."""
    known = [b for b in family.bytes_each if b > 0]
    if not known:
        return None
    return sum(known) if family.kind == "items" else max(known)


# -- reading the holders ------------------------------------------------------------------


def _chain_of(group: List[Finding]) -> Optional[List[str]]:
    for f in group:
        chain = f.evidence.get("chain")
        if isinstance(chain, list) and len(chain) >= 2 and all(isinstance(c, str) for c in chain):
            return [str(c) for c in chain]
    return None


def _key(group: List[Finding]) -> Optional[Tuple[str, ...]]:
    chain = _chain_of(group)
    if chain is None or any(f.evidence.get("pattern") == "watched object" for f in group):
        return None
    if any(c.startswith("[") for c in chain[1:]):
        return ("items", *("[*]" if c.startswith("[") else c for c in chain))
    if len(chain) >= 3 and chain[-1].startswith("."):
        return ("attrs", _kind(group), *chain[:-1])
    return None


def _kind(group: List[Finding]) -> str:
    """The type the group's culprit names, "" when none does."""
    return next((str(f.culprit_type) for f in group if f.culprit_type), "")


def _scope(root: str) -> str:
    """The frame or module a root variable lives in (``train.py:main`` of
    ``train.py:main:opt``, ``__main__`` of ``__main__.trainer``)."""
    return root.rsplit(":", 1)[0] if ":" in root else root.rsplit(".", 1)[0]


def _pace(group: List[Finding]) -> Optional[float]:
    for f in group:
        per = f.evidence.get("per_step")
        if isinstance(per, (int, float)) and per > 0:
            return float(per)
    return None


def _same_pace(holders: List[str], named: Dict[str, List[Finding]]) -> List[str]:
    """Of attribute siblings, those growing within ``PACE_RATIO`` of the first."""
    base = _pace(named[holders[0]])
    if base is None:
        return []
    out = []
    for h in holders:
        pace = _pace(named[h])
        if pace is not None and max(pace, base) <= PACE_RATIO * min(pace, base):
            out.append(h)
    return out


def _bytes(group: List[Finding]) -> float:
    sizes = [f.evidence.get("container_bytes") for f in group]
    return max((float(b) for b in sizes if isinstance(b, (int, float)) and b > 0), default=0.0)


def _wildcard(chains: List[List[str]]) -> str:
    """The chains' common form: ``[*]`` where the members' subscripts differ."""
    first = chains[0]
    steps = [
        "[*]" if step.startswith("[") and any(c[i] != step for c in chains[1:]) else step
        for i, step in enumerate(first)
    ]
    return first[0] + "".join(steps[1:])


def _step(chain: List[str], lead: List[str]) -> str:
    """How a member differs from the leading one: its steps from the first that differs
    (``['3']``, ``._mock_call_args_list``)."""
    for i, (a, b) in enumerate(zip(chain, lead)):
        if a != b:
            return "".join(chain[i:]) if i else chain[0] + "".join(chain[1:])
    return "".join(chain[1:])
