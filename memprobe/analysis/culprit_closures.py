"""A chain of closures, generators or objects behind a culprit no variable of the user's
was seen holding.

A function made again every round around the one before it (``f = wrap(f)``; a signal
handler that calls the handler it replaced, ``previous = signal.getsignal(sig)``) keeps
every earlier one in a closure cell, and with each one what it closes over: a job with its
arrays, a model. A generator that goes on with ``yield from`` itself keeps every earlier
one suspended with its locals (an epoch's augmented copy of the data). No container grows
and no variable gains anything; the census sees only functions, cells or generators grow.
The agent follows such chains from the user's roots (its chains.py: ``{"type": "function" |
"generator", "closure", "via", "holder", "links"}``); a chain a later census found longer
than an earlier one is named as the holder.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from memprobe.analysis.census import Profile
from memprobe.analysis.chains import CHAIN_MIN_LINKS, sightings
from memprobe.analysis.culprit_make import Culprit, held_by, make_culprit
from memprobe.analysis.hints import HINT_CHAIN, HINT_CLOSURE_CHAIN, HINT_GENERATOR_CHAIN


def closure_chain(prof: Profile) -> Optional[Tuple[str, int, str, str, str]]:
    """(holder, links, the function's or class' name, what links them, "function",
    "generator" or "object") of the longest chain the censuses found, when a later census
    found it longer than the first one that saw it; None otherwise."""
    seen = [
        (c["holder"], c["links"], name, str(c.get("via") or "?"), kind)
        for c in sightings(prof.entries)
        for kind, name in [_kind_name(c)]
        if c["links"] >= CHAIN_MIN_LINKS
    ]
    if not seen:
        return None
    best = max(seen, key=lambda c: c[1])
    same = [c for c in seen if c[0] == best[0]]
    grew = len(same) >= 2 and same[-1][1] > same[0][1]
    # one look that found a long chain is a chain too: a handler chained fifty deep is no
    # step's passing state, and a run whose censuses were few may have seen it only once
    return best if grew or best[1] >= 2 * CHAIN_MIN_LINKS else None


def _kind_name(c: Dict[str, Any]) -> Tuple[str, str]:
    """("function" | "generator", the code's name) for a chain of code; ("object", the
    class) for objects of a growing type each keeping the one before (``snapshot.parent``)."""
    kind = str(c.get("type"))
    if kind in ("function", "generator"):
        return kind, str(c.get("closure") or "?")
    return "object", kind


def with_closure_chain(c: Optional[Culprit], prof: Profile) -> Optional[Culprit]:
    """``c`` with the chain of closures as its holder, when it has none and one was found;
    the chain alone when nothing else was blamed (memory rising, and no count the censuses
    could put it on: the epochs' copies of the data are arrays of the generators' locals)."""
    if c is not None and c.holder is not None:
        return c
    chain = closure_chain(prof)
    if chain is None:
        return c
    holder, links, name, via, kind = chain
    if c is None:
        alive = f"More `{name}` {kind}s stay alive."
        c = make_culprit(prof, kind, None, False, "chain", None, alive, {}, None)
    if kind == "generator":
        tail = f"suspended `{name}` generators, each delegating to the next (`{via}`) and "
        tail += "keeping its locals."
    elif kind == "object":
        tail = f"`{name}` objects, each keeping the one before it (through `.{via}`) and "
        tail += "all it holds."
    else:
        tail = f"`{name}` closures, each keeping the one before it (through `{via}`) and "
        tail += "all it closes over."
    said = f"`{holder}` heads a chain of {links:,} {tail}"
    hint = {"generator": HINT_GENERATOR_CHAIN, "object": HINT_CHAIN}.get(kind, HINT_CLOSURE_CHAIN)
    return held_by(c, holder, said, hint, {"chain_links": links})
