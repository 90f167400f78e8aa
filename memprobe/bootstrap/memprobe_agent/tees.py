"""``itertools.tee`` branches read behind the others: what they keep, counted without
reading a single item.

``a, b = itertools.tee(stream)`` keeps every item that one branch has taken and another
not yet, in a chain of C objects (``itertools._tee_dataobject``, up to 57 items each)
that starts at the branch furthest behind. A branch read only at the end (an audit of a
training stream) keeps the whole stream, and a census sees one new object every 57 steps;
the items themselves (dicts of NumPy arrays) may be no gc objects at all. A branch's
backlog is the length of the chain from where it stands, read through the collector's own
traversal (``gc.get_referents``: no Python code of the target runs).
"""

from __future__ import annotations

import gc
import itertools
from typing import Any, List

from .census import qualified

_BRANCH: Any = itertools.tee(())[0]
TEE: type = type(_BRANCH)
LINK: type = type(gc.get_referents(_BRANCH)[0])  # itertools._tee_dataobject: every branch has one
del _BRANCH
LINK_ITEMS = 57  # items a link holds when full (CPython's LINKCELLS)
MAX_LINKS = 20_000  # a backlog is counted this far at most (about 1.1 million items)


def backlog(tee: Any) -> int:
    """About how many items this branch has still to read that another branch has read:
    the links from its own to the end of the chain, full ones counted whole."""
    link = _first_link(tee)
    links = 0
    while link is not None and links < MAX_LINKS:
        links += 1
        refs = gc.get_referents(link)
        link = refs[-1] if refs and type(refs[-1]) is LINK else None
    return max(0, links - 1) * LINK_ITEMS


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
