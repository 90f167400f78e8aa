"""Who holds a growing container: a referrer path from a root a person recognises.

The fallback of ``roots.search``: for what the walk down from the roots did
not reach, the path is found breadth first up through ``gc.get_referrers``
(one heap scan per level, every container at once) to a module global or a
class, so it is bounded by depth and by a deadline. Attribute names are read
through the ``__dict__`` slot descriptor of the object's type, never
``getattr``: no ``__getattr__``, property or lazy proxy of the target runs.
"""

from __future__ import annotations

import collections
import gc
import sys
import time
import types
from typing import Any, Dict, List, Optional, Set, Tuple

from .census import CONTAINER_TYPES, mro, type_dict, type_name

MAX_DEPTH = 7
MAX_WIDTH = 40
_DICTS = (dict, collections.OrderedDict, collections.defaultdict)
_SEQS = (list, tuple, collections.deque)
# functions, methods, cells, code: a holder path through a closure is not one a person reads
_SKIP = (
    types.FunctionType,
    types.MethodType,
    types.CodeType,
    getattr(types, "CellType", types.FunctionType),
)
Step = Tuple[str, Any]  # ("key", k) | ("attr", name) | ("index", i) | ("dictof", None)


def find_holders(objs: List[Any], deadline: float, exclude: Set[int]) -> List[Dict[str, Any]]:
    """One result per object (see ``result``), breadth first up the referrers, all objects
    together (one heap scan per level). The first module global or class attribute wins;
    a search cut off by depth or deadline returns the partial path under a ``?`` root."""
    roots = module_dicts()
    out: List[Optional[Dict[str, Any]]] = [None] * len(objs)
    level: List[Tuple[Any, List[Step], int]] = [(o, [], i) for i, o in enumerate(objs)]
    visited: Set[int] = {id(o) for o in objs}
    best: List[List[Step]] = [[] for _ in objs]
    scan_s = 0.0
    for _depth in range(MAX_DEPTH):
        if not level or time.perf_counter() + scan_s > deadline:
            break
        t0 = time.perf_counter()
        nodes = tuple(node for node, _, _ in level)
        refs = gc.get_referrers(*nodes)
        scan_s = time.perf_counter() - t0
        mine = exclude | {id(level), id(nodes), id(refs), id(objs)}
        index: Dict[int, List[Tuple[Any, List[Step], int]]] = {}
        for entry in level:
            index.setdefault(id(entry[0]), []).append(entry)
        nxt: List[Tuple[Any, List[Step], int]] = []
        for ref in refs:
            rid = id(ref)
            if rid in mine or rid in visited or type(ref) is types.FrameType:
                continue
            for child_id in _referent_ids(ref, index):
                for child, steps, origin in index[child_id]:
                    if out[origin] is not None:
                        continue
                    name = roots.get(rid)
                    if name is not None:
                        out[origin] = result(
                            name, ("module", name), [("key", _key_of(ref, child))] + steps, True
                        )
                    elif type in mro(type(ref)):
                        out[origin] = result(type_name(ref), None, steps, True)
                    else:
                        step = _step(ref, child)
                        if step is not None:
                            visited.add(rid)
                            nxt.append((ref, [step] + steps, origin))
                            if not best[origin] or len(best[origin]) <= len(steps):
                                best[origin] = [step] + steps
        del refs, nodes, index
        level = [e for e in nxt if out[e[2]] is None][:MAX_WIDTH]
    del level
    return [r if r is not None else result("?", None, best[i], False) for i, r in enumerate(out)]


def result(
    root: str, origin: Optional[Tuple[str, str]], steps: List[Step], complete: bool
) -> Dict[str, Any]:
    """{"holder": text, "chain": parts, "path": module-rooted steps or None, "complete": bool}."""
    text, chain = _render(root, steps)
    path = None
    if origin is not None and all(s[0] in ("key", "attr", "dictof") for s in steps):
        path = [list(origin)] + [[k, v] for k, v in steps]
    return {"holder": text, "chain": chain, "path": path, "complete": complete}


def _render(root: str, steps: List[Step]) -> Tuple[str, List[str]]:
    text = root
    chain = [root]
    attr_next = True  # after a module, a class or an instance's __dict__, keys are attributes
    for kind, value in steps:
        if kind == "dictof":
            attr_next = True
            continue
        if kind == "attr" or (kind == "key" and attr_next and isinstance(value, str)):
            part = f".{value}"
        elif kind == "index":
            part = f"[{value}]"
        else:
            part = f"[{_short_repr(value)}]"
        attr_next = False
        text += part
        chain.append(part)
    return text, chain


def _short_repr(value: Any) -> str:
    if type(value) in (str, int, float, bool, bytes) or value is None:
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return f"<{type_name(type(value))}>"


def module_dicts() -> Dict[int, str]:
    out: Dict[int, str] = {}
    for name, mod in list(sys.modules.items()):
        if type(mod) is types.ModuleType:
            try:
                out[id(vars(mod))] = name
            except TypeError:
                pass
    return out


def _referent_ids(ref: Any, index: Dict[int, Any]) -> List[int]:
    try:
        return [id(r) for r in gc.get_referents(ref) if id(r) in index]
    except Exception:  # noqa: BLE001
        return []


def _key_of(d: Any, child: Any) -> Any:
    try:
        for k, val in list(d.items()):
            if val is child:
                return k
    except Exception:  # noqa: BLE001
        pass
    return "?"


def _step(ref: Any, child: Any) -> Optional[Step]:
    cls = type(ref)
    if cls in _DICTS:
        return ("key", _key_of(ref, child))
    if cls in _SEQS:
        for i, item in enumerate(list(ref)):
            if item is child:
                return ("index", i)
        return ("index", "?")
    if cls in _SKIP:
        return None
    if cls is set or cls is frozenset:
        return ("index", "…")
    d = instance_dict(ref)
    if d is not None and d is child:
        return ("dictof", None)
    if d is not None:
        for k, val in list(d.items()):
            if val is child:
                return ("attr", k)
    for base in mro(cls):
        for name, member in list(type_dict(base).items()):
            if type(member).__name__ == "member_descriptor":
                try:
                    if member.__get__(ref, cls) is child:
                        return ("attr", name)
                except Exception:  # noqa: BLE001 - an empty slot
                    continue
    return ("attr", "?")


def instance_dict(obj: Any) -> Optional[Dict[str, Any]]:
    """An instance's ``__dict__`` through its type's slot descriptor, or None (no code runs)."""
    for base in mro(type(obj)):
        desc = type_dict(base).get("__dict__")
        if desc is None:
            continue
        if type(desc).__name__ not in ("getset_descriptor", "member_descriptor"):
            return None  # a property or something clever: do not touch it
        try:
            d = desc.__get__(obj, type(obj))
        except Exception:  # noqa: BLE001
            return None
        return d if type(d) is dict else None
    return None


def resolve(path: List[List[Any]]) -> Any:
    """Follow a module-rooted path of keys and attributes; None when it no longer leads anywhere."""
    if not path or path[0][0] != "module":
        return None
    mod = sys.modules.get(path[0][1])
    if type(mod) is not types.ModuleType:
        return None
    return follow(vars(mod), path[1:])


def follow(obj: Any, steps: List[List[Any]]) -> Any:
    """Follow keys and attributes (dict items and instance ``__dict__`` slots only) from obj."""
    for kind, value in steps:
        if kind == "dictof":
            obj = instance_dict(obj)
            if obj is None:
                return None
            continue
        if kind == "attr":
            d = instance_dict(obj)
            if d is None or value not in d:
                return None
            obj = d[value]
        elif kind == "key" and type(obj) in CONTAINER_TYPES and type(obj) is not set:
            try:
                obj = obj[value] if value in obj else None
            except Exception:  # noqa: BLE001
                return None
            if obj is None:
                return None
        else:
            return None
    return obj
