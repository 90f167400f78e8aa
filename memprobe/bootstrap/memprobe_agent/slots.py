"""Which grown containers get one of the tracker's watch slots (containers.py): rooted in
the user's code before a library's global, before a container nobody can name."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

from . import roots
from .containertypes import elem_types
from .typeinfo import ident

USER, LIBRARY, NAMELESS, NEVER = 0, 1, 2, 3
# items of a registry or a cache of types (weakrefs to classes, the classes themselves)
_REGISTRY_ITEMS = frozenset(["weakref.ReferenceType", "type", "weakref.KeyedRef"])


def rank(
    r: Optional[Dict[str, Any]], obj: Any, size: Tuple[int, int], new: bool
) -> Tuple[int, int, int]:
    """Which candidates get a watch slot: rooted in the user's code (a module of theirs,
    a function of theirs, an object one of them holds) before a library's global, before
    a container nobody can name; registries of types never. Then one seen growing before
    a new one, then the faster grower."""
    growth = -(size[0] - size[1])
    fresh = 1 if new else 0
    if r is None or not r.get("complete"):
        return (NEVER if new else NAMELESS, fresh, growth)
    if new and _positional(r):
        # a container born since the last census inside another one (a new snapshot's
        # module dict) or an object's attribute namespace: its holder is what grows
        return (NEVER, fresh, growth)
    items = elem_types(obj)
    if items and set(items) <= _REGISTRY_ITEMS:
        return (NEVER, fresh, growth)
    path = r.get("path")
    if (path and path[0][0] in ("frame", "signal")) or r.get("registry"):
        # (a known registry of the standard library's: filled by the user's own calls)
        return (USER, fresh, growth)
    if path and path[0][0] == "module":
        name = path[0][1]
        user = name == "__main__" or roots.is_user_module(name)
        return (USER if user else LIBRARY, fresh, growth)
    return (USER if r.get("anchor") is not None else LIBRARY, fresh, growth)


def _positional(r: Dict[str, Any]) -> bool:
    """The holder path reaches it by position in a sequence, or it is an instance dict."""
    chain = r.get("chain") or []
    return any(part.startswith("[") and part[1:2].isdigit() for part in chain) or (
        r.get("path") is not None and r["path"][-1][0] == "dictof"
    )


def rebound(
    before: Dict[str, int],
    order: List[int],
    objs: List[Any],
    found: Dict[int, Dict[str, Any]],
    sizes: Dict[int, Tuple[int, int]],
    is_new: Set[int],
) -> Dict[str, int]:
    """A new container under the holder of a shorter new one at the last census (``before``:
    holder -> length) is that one bound to a longer copy (``self.samples =
    self.samples[-k:]`` with k = 0, ``hist = hist + [x]``): a new object at every census, yet
    the same list to the code that grows it. It is taken out of ``is_new``, its size counted
    from that length. Returns this census' holder -> length of its new named containers."""
    out: Dict[str, int] = {}
    for cid, obj in zip(order, objs):
        r = found.get(ident(obj))
        if cid not in is_new or r is None or not r.get("complete"):
            continue
        was = before.get(r["holder"])
        if was is not None and was < sizes[cid][0]:
            is_new.discard(cid)
            sizes[cid] = (sizes[cid][0], was)
        out[r["holder"]] = sizes[cid][0]
    return out
