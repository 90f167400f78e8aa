"""Top-down holder search: a shallow walk from the roots a person recognises.

Most leaking containers hang a few steps below a root: ``__main__.losses``,
``__main__.trainer.actor_losses``, ``train.py:run_episode:history``,
``train.py:main:self.history``. Walking down from those roots finds them for
the price of a few hundred dict lookups, where a referrer search scans the
whole heap once per level. Whatever this walk misses goes to ``holders``.

Order of preference: the target's own modules (``__main__`` first), then the
function frames of every thread, then any other module's globals (one level).
Values are reached through dict items, sequence items and instance
``__dict__`` slots only: no ``getattr``, no property, no target code.
"""

from __future__ import annotations

import collections
import os
import sys
import time
import types
import weakref
from typing import Any, Dict, List, Optional, Set, Tuple

from .census import mro
from .holders import Step, instance_dict, result

_HERE = os.path.dirname(os.path.abspath(__file__))
USER_DEPTH = 3
LIB_DEPTH = 1
MAX_ITEMS = 2000  # items looked at per container on the way down
MAX_NODES = 100_000
_DICTS = (dict, collections.OrderedDict, collections.defaultdict)
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
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
    range,
    slice,
)


def library_dirs() -> List[str]:
    """Where the standard library and installed packages live (not the target's own code).

    From ``sys`` alone: ``sysconfig`` would import a ``_sysconfigdata`` module into the target.
    """
    dirs = set()
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        for lib in ("lib", "lib64", "Lib"):
            dirs.add(os.path.abspath(os.path.join(prefix, lib, version)))
            dirs.add(os.path.abspath(os.path.join(prefix, lib)))
    for p in sys.path:
        if p.endswith(("site-packages", "dist-packages")):
            dirs.add(os.path.abspath(p))
    return sorted(dirs)


_WEAKREF_OFFSET = type.__dict__["__weakrefoffset__"]
_LIBS = library_dirs()
_USER: Dict[str, bool] = {}  # module name -> the target's own code (not stdlib, not installed)


def search(targets: Set[int], deadline: float) -> Dict[int, Dict[str, Any]]:
    """id of each target found -> holder result (see ``holders.result``)."""
    found: Dict[int, Dict[str, Any]] = {}
    if not targets:
        return found
    seen: Set[int] = set()
    budget = [MAX_NODES]
    user_mods, lib_mods = _modules(_LIBS)
    for name, d in user_mods:
        _walk(name, ("module", name), d, USER_DEPTH, targets, found, seen, budget, deadline)
        if len(found) == len(targets):
            return found
    for label, local_items in _frames():
        _walk_items(label, None, local_items, USER_DEPTH, targets, found, seen, budget, deadline)
        if len(found) == len(targets):
            return found
    # other modules' globals, one level: compare ids in C, build no item lists
    left = targets - set(found)
    for name, d in lib_mods:
        try:
            hits = left.intersection(map(id, d.values()))
        except RuntimeError:  # changed size under us
            continue
        for k, v in _dict_items(d) if hits else ():
            if id(v) in hits and id(v) not in found:
                found[id(v)] = result(name, ("module", name), [("key", k)], True)
        left -= hits
        if not left:
            break
    return found


def _modules(libs: List[str]) -> Tuple[List[Tuple[str, Any]], List[Tuple[str, Any]]]:
    user: List[Tuple[str, Any]] = []
    lib: List[Tuple[str, Any]] = []
    for name, mod in list(sys.modules.items()):
        if type(mod) is not types.ModuleType or name.startswith("memprobe_agent"):
            continue
        d = vars(mod)
        if name == "__main__":
            user.insert(0, (name, d))
            continue
        is_user = _USER.get(name)
        if is_user is None:
            path = d.get("__file__")
            is_user = _USER[name] = isinstance(path, str) and not any(
                os.path.abspath(path).startswith(x + os.sep) for x in libs
            )
        (user if is_user else lib).append((name, d))
    return user, lib


def _frames() -> List[Tuple[str, List[Tuple[Any, Any]]]]:
    """Function frames of every thread, innermost first, with their locals.

    On Python < 3.13 reading ``f_locals`` refreshes a snapshot dict kept on the
    frame; it holds the locals as they are now until the next refresh, no longer.
    """
    out: List[Tuple[str, List[Tuple[Any, Any]]]] = []
    try:
        frames = list(sys._current_frames().values())
    except Exception:  # noqa: BLE001
        return out
    for frame in frames:
        f: Optional[types.FrameType] = frame
        depth = 0
        while f is not None and depth < 100:
            code = f.f_code
            if not code.co_filename.startswith(_HERE) and code.co_name != "<module>":
                try:
                    local_items = list(f.f_locals.items())
                except Exception:  # noqa: BLE001
                    local_items = []
                label = f"{os.path.basename(code.co_filename)}:{code.co_name}"
                out.append((label, [(("local", k), v) for k, v in local_items]))
            f = f.f_back
            depth += 1
    return out


def _walk(
    label: str,
    origin: Optional[Tuple[str, str]],
    d: Any,
    depth: int,
    targets: Set[int],
    found: Dict[int, Dict[str, Any]],
    seen: Set[int],
    budget: List[int],
    deadline: float,
) -> None:
    items = [(("key", k), v) for k, v in _dict_items(d)]
    _walk_items(label, origin, items, depth, targets, found, seen, budget, deadline)


def _walk_items(
    label: str,
    origin: Optional[Tuple[str, str]],
    items: List[Tuple[Any, Any]],
    depth: int,
    targets: Set[int],
    found: Dict[int, Dict[str, Any]],
    seen: Set[int],
    budget: List[int],
    deadline: float,
) -> None:
    # (value, steps from the root, anchor): the anchor is the last weak-referenceable object
    # on the way and how many steps lead to it; from it the path can be followed later
    level: List[Tuple[Any, List[Step], Any]] = []
    for step, value in items:
        if step[0] == "local":  # a frame local starts the path: file:function:name
            level.append((value, [("root", step[1])], None))
        else:
            level.append((value, [step], None))
    for d in range(depth):
        nxt: List[Tuple[Any, List[Step], Any]] = []
        for value, steps, anchor in level:
            vid = id(value)
            if vid in targets and vid not in found:
                found[vid] = _found(label, origin, steps, anchor)
                if len(found) == len(targets):
                    return
            if vid in seen or d == depth - 1 or budget[0] <= 0:
                continue
            seen.add(vid)
            budget[0] -= 1
            kids = _children(value)
            if kids and kids[0][0][0] == "attr" and _weakrefable(value):
                anchor = (value, len(steps))
            nxt.extend((child, steps + [step], anchor) for step, child in kids)
        if not nxt or time.perf_counter() > deadline:
            return
        level = nxt


def _found(
    label: str, origin: Optional[Tuple[str, str]], steps: List[Step], anchor: Any
) -> Dict[str, Any]:
    root = label
    skip = 0
    if steps and steps[0][0] == "root":
        root, steps, skip = f"{label}:{steps[0][1]}", steps[1:], 1
    res = result(root, origin, steps, True)
    if res["path"] is None and anchor is not None:
        obj, at = anchor
        rest = steps[at - skip :]
        if all(s[0] in ("key", "attr") for s in rest):
            res["anchor"] = (weakref.ref(obj), [list(s) for s in rest])
    return res


def _weakrefable(value: Any) -> bool:
    try:
        return bool(_WEAKREF_OFFSET.__get__(type(value), type))
    except Exception:  # noqa: BLE001
        return False


def _children(value: Any) -> List[Tuple[Step, Any]]:
    cls = type(value)
    if cls in _LEAVES or type in mro(cls):
        return []
    if cls in _DICTS:
        return [(("key", k), v) for k, v in _dict_items(value)]
    if cls in _SEQS:
        try:
            return [(("index", i), v) for i, v in enumerate(list(value)[:MAX_ITEMS])]
        except Exception:  # noqa: BLE001
            return []
    d = instance_dict(value)
    if d is None:
        return []
    return [(("attr", k), v) for k, v in _dict_items(d)]


def _dict_items(d: Any) -> List[Tuple[Any, Any]]:
    try:
        items = list(d.items())
    except Exception:  # noqa: BLE001 - changed size under us
        return []
    return items[:MAX_ITEMS]
