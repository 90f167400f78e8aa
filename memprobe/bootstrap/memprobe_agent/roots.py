"""Top-down holder search: a shallow walk from the roots a person recognises.

Most leaking containers hang a few steps below a root: ``__main__.losses``,
``__main__.trainer.actor_losses``, ``train.py:main:losses``,
``train.py:main:self.history``. Walking down from those roots finds them for
the price of a few hundred dict lookups, where a referrer search scans the
whole heap once per level. Whatever this walk misses goes to ``holders``. The roots
themselves, and which code is the target's own, come from ``userroots``.

Order of preference: the target's own modules (``__main__`` first), then the
function frames of the target's own code in every thread (outermost first:
``main`` before the step function it calls; frames of installed libraries are
never roots, a holder is named from the user's code), then any other module's
globals (one level). Values are reached through dict items, sequence items,
instance ``__dict__`` slots, closure cells and default arguments of functions,
class attributes of the target's own classes and the locals of suspended
generators: no ``getattr``, no property, no target code.
"""

from __future__ import annotations

import _thread
import collections
import contextvars
import functools
import gc
import time
import types
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from . import userroots
from .containertypes import CONTAINER_TYPES, DICT_TYPES
from .holders import FOLLOWABLE, Step, c_fields, result
from .lrucache import LRU_WRAPPER, lru_cache_dict
from .registries import known_registries
from .typeinfo import (
    cvar_current,
    cvar_default,
    cycle_saved,
    ident,
    instance_dict,
    module_registries,
    mro,
    thread_local_dicts,
    type_dict,
)
from .userroots import LIBS, USER, Start, frame_roots, function_children, modules, signal_roots
from .userroots import is_user_file as is_user_file
from .userroots import is_user_module as is_user_module
from .userroots import library_dirs as library_dirs
from .walkpath import found_at, owners_of, steps_of

USER_DEPTH = 3
# what the shallow pass missed is looked for again this deep, breadth first on a node budget
# of its own: a framework keeps the user's objects a few levels down
# (``main:trainer.callback_handler.callbacks[0].history``, ``main:trainer.lightning_module``)
DEEP_DEPTH = 7
# and below that depth, down a tree of dicts only (a trie, a nested index: ``index._root['c']
# ['o']['u']…``), this deep: every node a dict, each a dict value of the one above
TREE_DEPTH = 32
MAX_ITEMS = 2000  # items looked at per container on the way down
MAX_NODES = 100_000
_SEQS = (list, tuple, collections.deque)
_LEAVES = (
    str,
    bytes,
    int,
    float,
    bool,
    complex,
    type(None),
    types.ModuleType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
    range,
    slice,
)

_WEAKREF_OFFSET = type.__dict__["__weakrefoffset__"]


def search(targets: Set[int], deadline: float) -> Dict[int, Dict[str, Any]]:
    """id of each target found -> holder result (see ``holders.result``)."""
    try:
        return _search(targets, deadline)
    finally:
        _ATOMIC.clear()


def _search(targets: Set[int], deadline: float) -> Dict[int, Dict[str, Any]]:
    found = known_registries(targets)
    if not targets or len(found) == len(targets):
        return found
    seen: Set[int] = set(found)
    budget = [MAX_NODES]
    user_mods, lib_mods = modules(LIBS)
    starts = _starts(user_mods)
    for label, origin, items in starts:
        _walk_items(label, origin, items, USER_DEPTH, targets, found, seen, budget, deadline)
        if len(found) == len(targets):
            return found
    # deeper, each root in turn (the shallow pass stopped at its depth: a fresh ``seen``)
    seen = set()
    budget = [MAX_NODES]
    for label, origin, items in starts:
        if time.perf_counter() > deadline or budget[0] <= 0:
            break
        _walk_items(
            label, origin, items, DEEP_DEPTH, targets, found, seen, budget, deadline, TREE_DEPTH
        )
        if len(found) == len(targets):
            return found
    # other modules' globals, one level: compare ids in C, build no item lists
    left = targets - set(found)
    for name, d in lib_mods:
        try:
            hits = left.intersection(map(ident, d.values()))
        except RuntimeError:  # changed size under us
            continue
        for k, v in _dict_items(d) if hits else ():
            if ident(v) in hits and ident(v) not in found:
                found[ident(v)] = result(name, ("module", name), [("key", k)], True)
        left -= hits
        if not left:
            return found
    return found


def _starts(user_mods: List[Tuple[str, Any]]) -> List[Start]:
    """Where a walk starts, in order: the target's own modules, its functions' frames, the
    signal handlers it installed, then the census' suspended generators and coroutines
    (what the named roots reach is named by them first)."""
    starts: List[Start] = [
        (name, ("module", name), [(("key", k), v) for k, v in _dict_items(d)])
        for name, d in user_mods
    ]
    return starts + frame_roots() + signal_roots() + userroots.suspended_roots()


def find_matching(
    match: Callable[[Any], bool],
    deadline: float,
    limit: int = 20,
    depth: int = 2,
    owners: Optional[Dict[str, List[str]]] = None,
) -> List[Tuple[str, Any]]:
    """(holder, object) for what ``match`` accepts among the user's roots, down to ``depth``
    (locals, globals and one level below: ``hidden``, ``self.state``, ``model.memory``).

    What the census counted may have moved on by the time it names things: in a loop
    that runs while a background census works, ``hidden`` is a new tensor every step.
    This looks at the roots as they are now. ``match`` sees only values a walk reaches
    and must be cheap and side-effect free (``type()`` checks, C getters). ``owners``, when
    given, gets for each holder the classes whose attributes its path reads
    (walkpath.owners_of).
    """
    try:
        return _find_matching(match, deadline, limit, depth, owners)
    finally:
        _ATOMIC.clear()


def _find_matching(
    match: Callable[[Any], bool],
    deadline: float,
    limit: int,
    depth: int,
    owners: Optional[Dict[str, List[str]]],
) -> List[Tuple[str, Any]]:
    out: List[Tuple[str, Any]] = []
    seen: Set[int] = set()
    starts = _starts(modules(LIBS)[0])
    for label, origin, items in starts:
        # the path: a linked (step, parent, owner) chain, as the walk keeps it (walkpath.py)
        level: List[Tuple[Any, Any]] = [(v, (step, None, None)) for step, v in items]
        for d in range(depth):
            nxt: List[Tuple[Any, Any]] = []
            for value, path in level:
                if ident(value) in seen:
                    continue
                seen.add(ident(value))
                try:
                    hit = match(value)
                except Exception:  # noqa: BLE001
                    hit = False
                if hit:
                    r = found_at(label, origin, steps_of(path), None, owners_of(path))
                    out.append((r["holder"], value))
                    if owners is not None:
                        owners[r["holder"]] = r.get("owners", [])
                    if len(out) >= limit:
                        return out
                elif d < depth - 1 and _looked_into(value):
                    owner = type(value)
                    nxt.extend((c, (st, path, owner)) for st, c in _children(value)[:64])
            if time.perf_counter() > deadline:
                return out
            level = nxt
    return out


def untracked_containers(min_len: int, deadline: float, limit: int = 20) -> List[Any]:
    """Containers of ``min_len`` items or more that the gc does not track, among the user's
    roots and three levels below them (``main:pipe._transform_cache``).

    A dict whose keys and values are all atomic (strings, numbers, numpy arrays) is
    untracked, so ``gc.get_objects`` never lists it: a memo of arrays keyed by a hash is
    such a dict. Only ``type()``, ``gc.is_tracked`` and ``len`` of exact container types
    are asked of what the walk reaches.
    """

    def untracked(value: Any) -> bool:
        return type(value) in CONTAINER_TYPES and not gc.is_tracked(value) and len(value) >= min_len

    return [obj for _, obj in find_matching(untracked, deadline, limit=limit, depth=3)]


SMALL_DICT = 16


def _looked_into(value: Any) -> bool:
    """Whether ``find_matching`` looks one level below ``value``: objects, and small dicts
    (a state dict of a few running values: ``state["running_loss"] += loss``), never
    sequences or big dicts, whose items are a container's to name (``losses[i]``)."""
    cls = type(value)
    if cls in _SEQS:
        return False
    return cls not in DICT_TYPES or len(value) <= SMALL_DICT


def _walk_items(
    label: str,
    origin: Optional[Tuple[Any, ...]],
    items: List[Tuple[Step, Any]],
    depth: int,
    targets: Set[int],
    found: Dict[int, Dict[str, Any]],
    seen: Set[int],
    budget: List[int],
    deadline: float,
    tree_depth: int = 0,
) -> None:
    """Breadth first from ``items`` down to ``depth``; then, to ``tree_depth``, only down
    dicts that are values of dicts (a tree of dicts)."""
    # (value, path, anchor): the path from the root is a linked chain of (step, parent, the
    # class the step reads an attribute of) triples, made into a list only for what is found
    # (a walk through a list of a few thousand small lists queues tens of thousands of
    # children: copying each one's path cost a census a second); the anchor is the last
    # weak-referenceable object on the way and how many steps lead to it: from it the path
    # can be followed later
    level: List[Tuple[Any, Any, Any]] = [
        (value, (step, None, None), None) for step, value in items if not _atomic(value)
    ]
    limit = max(depth, tree_depth)
    for d in range(limit):
        tree = d >= depth - 1  # past the ordinary depth: dicts in dicts only
        nxt: List[Tuple[Any, Any, Any]] = []
        for value, path, anchor in level:
            vid = ident(value)
            if vid in targets and vid not in found:
                found[vid] = found_at(label, origin, steps_of(path), anchor, owners_of(path))
                if len(found) == len(targets):
                    return
            if vid in seen or d == limit - 1 or budget[0] <= 0:
                continue
            if tree and type(value) not in DICT_TYPES:
                continue
            seen.add(vid)
            budget[0] -= 1
            kids = _children(value)
            if kids and kids[0][0][0] in FOLLOWABLE and _weakrefable(value):
                anchor = (value, d + 1)
            owner = type(value)
            # atoms are never a target and have nothing below them: not queued at all
            for step, child in kids:
                if tree and type(child) not in DICT_TYPES:
                    continue
                atom = _ATOMIC.get(type(child))
                if not (_atomic(child) if atom is None else atom):
                    nxt.append((child, (step, path, owner), anchor))
        if not nxt or time.perf_counter() > deadline:
            return
        level = nxt


# leaf or not, by class, for one walk: emptied after each (a class the program makes and
# drops, a namedtuple per call, must not be kept alive by the agent)
_ATOMIC: Dict[type, bool] = {}


def _atomic(value: Any) -> bool:
    """A leaf: a string, number, bytes (numpy's ``str_`` and ``float64`` too, by their
    base classes), None, a module, a builtin or a code object."""
    cls = type(value)
    known = _ATOMIC.get(cls)
    if known is None:
        known = _ATOMIC[cls] = any(base in _LEAVES for base in mro(cls))
    return known


def _weakrefable(value: Any) -> bool:
    try:
        return bool(_WEAKREF_OFFSET.__get__(type(value), type))
    except Exception:  # noqa: BLE001
        return False


def _children(value: Any) -> List[Tuple[Step, Any]]:
    cls = type(value)
    if cls in _LEAVES:
        return []
    if cls in DICT_TYPES:
        return [(("key", k), v) for k, v in _dict_items(value)]
    if cls in _SEQS:
        try:
            return [(("index", i), v) for i, v in enumerate(list(value)[:MAX_ITEMS])]
        except Exception:  # noqa: BLE001
            return []
    if cls is types.FunctionType:
        return function_children(value)
    if cls is functools.partial:  # its C members (``trainer.loss_fn.keywords['window']``)
        parts = (("func", value.func), ("args", value.args), ("keywords", value.keywords))
        return [(("attr", k), v) for k, v in parts]
    if cls is types.GeneratorType:
        return userroots.suspended_locals(value)
    if type in mro(cls):
        return _class_children(value)
    if LRU_WRAPPER is not None and cls is LRU_WRAPPER:
        cache = lru_cache_dict(value)
        return [(("lrucache", None), cache)] if cache is not None else []
    if _thread._local in mro(cls):
        return _thread_local_children(value)
    if cls is contextvars.ContextVar:
        default = cvar_default(value)
        now = (("cvvalue", cvar_current(value, default)), ("cvdefault", default))
        return [((kind, None), v) for kind, v in now if v is not None]
    saved = cycle_saved(value)
    if saved is not None:
        return [(("cycled", None), saved)]
    d = instance_dict(value)
    kids = [(("attr", k), v) for k, v in _dict_items(d)] if d is not None else []
    # a torch module's submodules, parameters and buffers first, by the names the code
    # uses (``model.fc1.parametrizations.weight``, not ``model._modules['fc1']...``): one
    # level each, where a module tree is otherwise two per level
    registered = [(("attr", k), v) for r in module_registries(d) for k, v in _dict_items(r)]
    return registered + kids + [(("attr", k), v) for k, v in c_fields(value)]


def _thread_local_children(local: Any) -> List[Tuple[Step, Any]]:
    """A ``threading.local``'s attributes in every thread that set them (the agent's own
    thread would see none through the object)."""
    out: List[Tuple[Step, Any]] = []
    for i, per_thread in enumerate(thread_local_dicts(local)):
        out.extend((("tls", (i, k)), v) for k, v in _dict_items(per_thread) if isinstance(k, str))
    return out


def _class_children(cls: Any) -> List[Tuple[Step, Any]]:
    """Class attributes of the target's own classes (``Tracker.records = []``)."""
    ns = type_dict(cls)
    module = ns.get("__module__") if hasattr(ns, "get") else None
    if not isinstance(module, str) or not (module == "__main__" or USER.get(module)):
        return []
    return [
        (("classattr", k), v)
        for k, v in _dict_items(ns)
        if isinstance(k, str) and not (k.startswith("__") and k.endswith("__"))
    ]


def _dict_items(d: Any) -> List[Tuple[Any, Any]]:
    try:
        items = list(d.items())
    except Exception:  # noqa: BLE001 - changed size under us
        return []
    return items[:MAX_ITEMS]
