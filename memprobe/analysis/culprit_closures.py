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

from typing import Optional

from memprobe.analysis.census import Profile
from memprobe.analysis.chains import longest
from memprobe.analysis.culprit_make import Culprit, classes_after, held_by, make_culprit
from memprobe.analysis.hints import (
    HINT_CHAIN,
    HINT_CLOSURE_CHAIN,
    HINT_GENERATOR_CHAIN,
    HINT_TRACEBACK_CHAIN,
)
from memprobe.record import Evidence


def with_closure_chain(c: Optional[Culprit], prof: Profile) -> Optional[Culprit]:
    """``c`` with the chain of closures as its holder, when it has none and one was found;
    the chain alone when nothing else was blamed (memory rising, and no count the censuses
    could put it on: the epochs' copies of the data are arrays of the generators' locals)."""
    if c is not None and c.holder is not None:
        return c
    chain = longest(prof.entries)
    if chain is None:
        return c
    holder, links, name, via, kind, owners = chain
    via = via or "?"
    if c is None:
        alive = f"More `{name}` {kind}s stay alive."
        # a chain of objects is of their class (``traceback``); one of code, of its kind
        what = name if kind == "object" else kind
        c = make_culprit(prof, what, None, False, "chain", None, alive, {}, None)
    if kind == "generator":
        tail = f"suspended `{name}` generators, each delegating to the next (`{via}`) and "
        tail += "keeping its locals."
    elif kind == "object":
        tail = f"`{name}` objects, each keeping the one before it (through `.{via}`) and "
        tail += "all it holds."
    else:
        tail = f"`{name}` closures, each keeping the one before it (through `{via}`) and "
        tail += "all it closes over."
    said = f"`{holder}`{classes_after(owners)} heads a chain of {links:,} {tail}"
    hint = {"generator": HINT_GENERATOR_CHAIN, "object": HINT_CHAIN}.get(kind, HINT_CLOSURE_CHAIN)
    if name == "traceback":  # one exception raised again and again (chains.tracebacks)
        hint = HINT_TRACEBACK_CHAIN
    more: Evidence = {"chain_links": links}
    if owners:
        more["holder_types"] = owners
    return held_by(c, holder, said, hint, more)
