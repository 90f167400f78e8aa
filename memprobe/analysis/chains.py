"""The chains the agent's censuses reported (its chains.py): objects of a growing type each
keeping the one before, functions made around the last one, generators that ``yield from``
themselves. One reader of the payload for every rule that weighs them."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence

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
