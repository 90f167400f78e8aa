"""``itertools.tee`` branches read behind the others: what they keep, counted without
reading a single item.

``a, b = itertools.tee(stream)`` keeps every item that one branch has taken and another
not yet, in a chain of C objects (``itertools._tee_dataobject``, up to 57 items each)
that starts at the branch furthest behind. A branch read only at the end (an audit of a
training stream) keeps the whole stream, and a census sees one new object every 57 steps;
the items themselves (dicts of NumPy arrays) may be no gc objects at all. A branch's
backlog is what the chain holds from where it stands, read through the collector's own
traversal (``gc.get_referents``: no Python code of the target runs).
"""

from __future__ import annotations

import gc
import itertools
import sys
from typing import Any, List

from .census import qualified

_BRANCH: Any = itertools.tee(())[0]
TEE: type = type(_BRANCH)
LINK: type = type(gc.get_referents(_BRANCH)[0])  # itertools._tee_dataobject: every branch has one
del _BRANCH
LINK_ITEMS = 57  # items a link holds when full (CPython's LINKCELLS)
MAX_LINKS = 20_000  # a backlog is counted this far at most (about 1.1 million items)


def backlog(tee: Any) -> int:
    """How many items this branch has still to read that another branch has read: the
    items of the links from its own to the end of the chain, less those of its own link it
    has read already (where Python tells: see ``_read``)."""
    link = _first_link(tee)
    links = items = 0
    while link is not None and links < MAX_LINKS:
        links += 1
        refs = gc.get_referents(link)  # its iterator, its items, the next link if any
        nxt = refs[-1] if refs and type(refs[-1]) is LINK else None
        items += max(0, len(refs) - 1 - (nxt is not None))
        link = nxt
    return max(0, items - _read(tee))


def _read(tee: Any) -> int:
    """The items of its first link this branch has read. Only ``__reduce__`` says (C code,
    no Python of the target's runs); from Python 3.12 on it warns that pickling itertools
    goes away, so there 0: a backlog counted up to one link (57 items) too long, but no
    longer a staircase of whole links (a rate read off those was off by half or more)."""
    if sys.version_info >= (3, 12):
        return 0
    try:
        state = tee.__reduce__()[2]
        return int(state[1]) if isinstance(state, tuple) and len(state) == 2 else 0
    except Exception:  # noqa: BLE001 - a figure, never the target's business
        return 0


def item_types(tee: Any, limit: int = 3) -> List[str]:
    """The types of the first few items waiting for this branch."""
    link = _first_link(tee)
    if link is None:
        return []
    out: List[str] = []
    for item in gc.get_referents(link)[1:]:  # (its iterator first, the next link last)
        name = qualified(item)
        if name not in out and type(item) is not LINK:
            out.append(name)
        if len(out) >= limit:
            break
    return out


def _first_link(tee: Any) -> Any:
    return next((ref for ref in gc.get_referents(tee) if type(ref) is LINK), None)
