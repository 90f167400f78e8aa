"""A chain of objects of a growing type, each keeping the one before it.

``train_set = Subset(train_set, keep)`` every pruning round, a wrapper that wraps the last
wrapper: no container grows, the chain does, and each link may keep much (a ``Subset``'s
own list of indices). The census names the types that grow; this looks for their
instances a few steps below the user's roots (``roots.find_matching``) and, from each one
found, follows the attribute that leads to another object of its type, counting links.
Only ``type()`` and instance ``__dict__`` reads: no code of the target runs, and nothing is
kept once the census returns.
"""

from __future__ import annotations

from typing import Any, Dict, List, Set

from . import roots
from .containertypes import CONTAINER_TYPES
from .typeinfo import instance_dict, mro, type_name

MIN_LINKS = 3  # a head and two below it: fewer is a wrapper, not a chain
MAX_LINKS = 4096  # links followed at most from one head
MAX_CHAINS = 2  # per census
MAX_HEADS = 8  # instances of the growing types looked at from the roots


def find(names: Set[str], deadline: float) -> List[Dict[str, Any]]:
    """[{"type", "holder", "links"}] for the chains of the types ``names`` whose heads the
    user's roots lead to (two levels down: a local, an attribute of one)."""
    names = {n for n in names if "." in n}  # builtins (dict, list, cell...) never chain
    if not names:
        return []
    known: Dict[type, bool] = {}

    def of_growing_type(value: Any) -> bool:
        cls = type(value)
        hit = known.get(cls)
        if hit is None:  # containers and their subclasses (an OrderedDict) are the tracker's
            hit = known[cls] = type_name(cls) in names and not CONTAINER_TYPES.intersection(
                mro(cls)
            )
        return hit and instance_dict(value) is not None  # its links are attributes

    try:
        heads = roots.find_matching(of_growing_type, deadline, MAX_HEADS, depth=2)
    except Exception:  # noqa: BLE001 - a census never fails the program for a name
        return []
    out: List[Dict[str, Any]] = []
    for holder, head in heads:
        name = type_name(type(head))
        if any(c["type"] == name for c in out):
            continue
        links = length(head)
        if links >= MIN_LINKS:
            out.append({"type": name, "holder": holder, "links": links})
            if len(out) >= MAX_CHAINS:
                break
    return out


def length(head: Any) -> int:
    """Links from ``head`` down through attributes holding an object of its own type."""
    cls = type(head)
    seen = {id(head)}
    obj = head
    while len(seen) < MAX_LINKS:
        d = instance_dict(obj)
        try:
            nxt = next((v for v in list(d.values()) if type(v) is cls), None) if d else None
        except RuntimeError:  # changed size under us (another thread)
            break
        if nxt is None or id(nxt) in seen:
            break
        seen.add(id(nxt))
        obj = nxt
    return len(seen)
