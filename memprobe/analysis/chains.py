"""The chains the agent's censuses reported (its chains.py): objects of a growing type each
keeping the one before, functions made around the last one, generators that ``yield from``
themselves. One reader of the payload for every rule that weighs them."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

CHAIN_MIN_LINKS = 3  # a head and two below it (the agent reports no shorter one)


def sightings(census: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """Every chain the censuses reported, in census order, with a text ``holder`` and a
    whole number of ``links`` (the rest of each entry as the agent wrote it)."""
    out: List[Dict[str, Any]] = []
    for entry in census:
        found = entry.get("chains") if isinstance(entry, dict) else None
        for c in found if isinstance(found, list) else []:
            if not isinstance(c, dict) or not isinstance(c.get("holder"), str):
                continue
            links = c.get("links")
            if isinstance(links, int) and not isinstance(links, bool):
                out.append(c)
    return out


class Chain(NamedTuple):
    holder: str
    links: int
    name: str  # the objects' class, or the function's or generator's code
    via: str  # what links them (an attribute, a closure cell, "yield from"); "" unknown
    kind: str  # "object" | "function" | "generator"
    owners: List[str] = []  # the classes whose attributes the head's path reads


def longest(census: Sequence[Mapping[str, Any]], of_type: Optional[str] = None) -> Optional[Chain]:
    """The longest chain the censuses found (of objects of ``of_type`` only, when given),
    when a later census found the same one longer than the first one that saw it; for a
    chain of code, also when one look found it twice as long as the agent reports: a
    handler chained fifty deep is no step's passing state, and a run whose censuses were
    few may have seen it only once. None otherwise: a chain of objects that stays as long,
    or that one census saw (a step's small tree of nodes pointing to their parent, caught
    in a local while the step runs: sample_scripts/ok_cyclic_garbage), is no chain that
    grows."""
    seen = [
        Chain(c["holder"], c["links"], name, str(c.get("via") or ""), kind, _owners(c))
        for c in sightings(census)
        for kind, name in [_kind_name(c)]
        if c["links"] >= CHAIN_MIN_LINKS and (of_type is None or c.get("type") == of_type)
    ]
    if not seen:
        return None
    best = max(seen, key=lambda c: c.links)
    same = [c for c in seen if c.holder == best.holder]
    grew = len(same) >= 2 and same[-1].links > same[0].links
    once = best.kind != "object" and best.links >= 2 * CHAIN_MIN_LINKS
    return best if grew or once else None


def _owners(c: Mapping[str, Any]) -> List[str]:
    owners = c.get("owners")
    return [str(o) for o in owners] if isinstance(owners, list) else []


def _kind_name(c: Mapping[str, Any]) -> Tuple[str, str]:
    """("function" | "generator", the code's name) for a chain of code; ("object", the
    class) for objects of a growing type each keeping the one before (``snapshot.parent``)."""
    kind = str(c.get("type"))
    if kind in ("function", "generator"):
        return kind, str(c.get("closure") or "?")
    return "object", kind
