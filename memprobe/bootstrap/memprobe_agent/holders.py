"""Who holds a growing container: a referrer path from a root a person recognises.

The fallback of ``roots.search``: for what the walk down from the roots did
not reach, the path is found breadth first up through ``gc.get_referrers``
(one heap scan per level, every container at once) to a module global or a
class, so it is bounded by depth and by a deadline. Attribute names are read
through the ``__dict__`` slot descriptor of the object's type, never
``getattr``: no ``__getattr__``, property or lazy proxy of the target runs.
"""

from __future__ import annotations

import _thread
import collections
import contextvars
import gc
import sys
import time
import types
import weakref
from typing import Any, Dict, List, Optional, Set, Tuple

from . import holdertext
from .containertypes import CONTAINER_TYPES
from .lrucache import LRU_WRAPPER, lru_cache_dict
from .typeinfo import (
    cvar_default,
    cycle_saved,
    ident,
    instance_dict,
    module_registries,
    mro,
    thread_local_dicts,
    type_dict,
    type_name,
)

MAX_DEPTH = 7
MAX_WIDTH = 40
_DICTS = (dict, collections.OrderedDict, collections.defaultdict)
_SEQS = (list, tuple, collections.deque)
# functions, cells, code: a holder path through a closure is not one a person reads (a bound
# method's object is: ``gc.callbacks[3].__self__``)
_SKIP = (
    types.FunctionType,
    types.CodeType,
    getattr(types, "CellType", types.FunctionType),
)
# ("key", k) | ("attr", name) | ("index", i) | ("dictof", None) | ("closure", name)
# | ("default", name) | ("genlocal", name) | ("classattr", name) | ("lrucache", None)
# | ("lruitem", None): a key or result an lru_cache holds | ("tls", (i, name)): an attribute of
# a ``threading.local`` in the i-th thread that set one (see thread_local_dicts)
# | ("cvdefault", None): a ``contextvars.ContextVar``'s default (see cvar_default)
# | ("cvvalue", None): its value in the census thread's context (see cvar_current; not
# followable: another thread, the agent's, reads the default there)
# | ("cycled", None): what an ``itertools.cycle`` saved of its first pass (see cycle_saved)
# | ("self", None): a bound method's object
Step = Tuple[str, Any]
# steps that lead to the same object again later (positions in a sequence do not)
FOLLOWABLE = frozenset(
    "key attr dictof closure default genlocal classattr lrucache tls cvdefault cycled".split()
)
# hook dicts a tensor keeps in C (``register_hook`` adds to them), read through the C getters
# of torch's TensorBase: no Python code of the target runs
_TENSOR_FIELDS = ("_backward_hooks", "_post_accumulate_grad_hooks")


def find_holders(objs: List[Any], deadline: float, exclude: Set[int]) -> List[Dict[str, Any]]:
    """One result per object (see ``result``), breadth first up the referrers, all objects
    together (one heap scan per level). The first module global or class attribute wins;
    a search cut off by depth or deadline returns the partial path under a ``?`` root."""
    roots = module_dicts()
    out: List[Optional[Dict[str, Any]]] = [None] * len(objs)
    level: List[Tuple[Any, List[Step], int]] = [(o, [], i) for i, o in enumerate(objs)]
    visited: Set[int] = {ident(o) for o in objs}
    best: List[List[Step]] = [[] for _ in objs]
    scan_s = 0.0
    for _depth in range(MAX_DEPTH):
        if not level or time.perf_counter() + scan_s > deadline:
            break
        t0 = time.perf_counter()
        nodes = tuple(node for node, _, _ in level)
        refs = gc.get_referrers(*nodes)
        scan_s = time.perf_counter() - t0
        mine = exclude | {ident(level), ident(nodes), ident(refs), ident(objs)}
        index: Dict[int, List[Tuple[Any, List[Step], int]]] = {}
        for entry in level:
            index.setdefault(ident(entry[0]), []).append(entry)
        nxt: List[Tuple[Any, List[Step], int]] = []
        for ref in refs:
            rid = ident(ref)
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
                    elif type(ref) is types.GeneratorType:
                        out[origin] = _generator_root(ref, child, steps)
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
    root: str,
    origin: Optional[Tuple[Any, ...]],
    steps: List[Step],
    complete: bool,
    in_variable: bool = False,
) -> Dict[str, Any]:
    """{"holder": text, "chain": parts, "path": rooted steps or None, "complete": bool}.

    ``origin`` is ``("module", name)`` or ``("frame", code key, local name)``; the path
    exists when every step can be followed again later (see ``resolve``). ``in_variable``:
    the root names a variable (a function's local), so a first key is a key of its value
    (``main:acts['fc.stats']``), not an attribute as in a module's or a class's namespace.
    """
    text, chain = holdertext.render(root, steps, not in_variable)
    path = None
    if origin is not None and all(s[0] in FOLLOWABLE for s in steps):
        path = [list(origin)] + [[k, v] for k, v in steps]
    return {"holder": text, "chain": chain, "path": path, "complete": complete}


def _generator_root(gen: Any, child: Any, steps: List[Step]) -> Dict[str, Any]:
    """A suspended generator holds it in a local: named ``file:function:local`` like a
    function's local, followed later from the generator itself."""
    import os

    from . import frames

    code = gen.gi_code
    frame = gen.gi_frame
    name = "?"
    if frame is not None:
        items = frames.local_items(frame, frames.generator_whose(gen))
        name = next((k for k, v in items if v is child), "?")
    res = result(
        f"{os.path.basename(code.co_filename)}:{code.co_name}:{name}", None, steps, True, True
    )
    if name != "?" and all(s[0] in FOLLOWABLE for s in steps):
        res["anchor"] = (weakref.ref(gen), [["genlocal", name]] + [list(s) for s in steps])
    return res


def module_dicts() -> Dict[int, str]:
    out: Dict[int, str] = {}
    for name, mod in list(sys.modules.items()):
        if type(mod) is types.ModuleType:
            try:
                out[ident(vars(mod))] = name
            except TypeError:
                pass
    return out


def _referent_ids(ref: Any, index: Dict[int, Any]) -> List[int]:
    try:
        return [ident(r) for r in gc.get_referents(ref) if ident(r) in index]
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
    if cls is types.MethodType:
        return ("self", None) if ref.__self__ is child else None
    if cls in _SKIP:
        return None
    if cls is set or cls is frozenset:
        return ("index", "…")
    if LRU_WRAPPER is not None and cls is LRU_WRAPPER:
        if lru_cache_dict(ref) is child:
            return ("lrucache", None)
        # gc sees the wrapper itself refer to each cached key and result (its links are
        # not gc objects): an item of the cache, not the cache
        return ("lruitem", None)
    for name, value in c_fields(ref):
        if value is child:
            return ("attr", name)
    if cls is contextvars.ContextVar:
        return ("cvdefault", None) if cvar_default(ref) is child else None
    if cycle_saved(ref) is child:
        return ("cycled", None)
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


def c_fields(obj: Any) -> List[Tuple[str, Any]]:
    """A tensor's hook dicts (``_backward_hooks``…), through TensorBase's C getters.

    Called for every instance the holder walks pass: one membership test in the type's mro
    for anything that is not a tensor."""
    base = _tensor_base()
    if base is None or base not in mro(type(obj)):
        return []
    ns = type_dict(base)
    out: List[Tuple[str, Any]] = []
    for name in _TENSOR_FIELDS:
        desc = ns.get(name) if hasattr(ns, "get") else None
        if desc is None or type(desc).__name__ != "getset_descriptor":
            continue
        try:
            value = desc.__get__(obj, type(obj))
        except Exception:  # noqa: BLE001
            continue
        if value is not None:
            out.append((name, value))
    return out


def _tensor_base() -> Any:
    """torch's ``TensorBase`` class where the target has imported torch (never imported
    here), or None."""
    torch_c = sys.modules.get("torch._C")
    if type(torch_c) is not types.ModuleType:
        return None
    ns = vars(torch_c)
    base = ns.get("TensorBase") or ns.get("_TensorBase")
    return base if isinstance(base, type) else None


def resolve(path: List[List[Any]], frames_by_key: Optional[Dict[Any, Any]] = None) -> Any:
    """Follow a module-, frame- or signal-rooted path; None when it no longer leads anywhere.
    ``frames_by_key`` (code key -> running frame) saves looking the frames up per path."""
    if not path:
        return None
    if path[0][0] == "module":
        mod = sys.modules.get(path[0][1])
        if type(mod) is not types.ModuleType:
            return None
        return follow(vars(mod), path[1:])
    if path[0][0] == "frame" and len(path[0]) == 3:
        from . import frames

        key = tuple(path[0][1])
        found = frames_by_key.get(key) if frames_by_key is not None else frames.find_frame(key)
        if found is None:
            return None
        frame, whose = found
        return follow(frames.read_local(frame, path[0][2], whose), path[1:])
    if path[0][0] == "signal":  # a handler the target installed (see userroots.signal_roots)
        from .userroots import signal_handler

        handler = signal_handler(int(path[0][1]))
        return follow(handler, path[1:]) if handler is not None else None
    return None


def follow(obj: Any, steps: List[List[Any]]) -> Any:
    """Follow keys, attributes, closure cells, defaults, generator locals and class
    attributes from obj (slots and C getters only: no target code runs)."""
    for kind, value in steps:
        if obj is None:
            return None
        if kind == "dictof":
            obj = instance_dict(obj)
        elif kind == "attr":
            d = instance_dict(obj)
            if d is not None and value in d:
                obj = d.get(value)
            elif value in _TENSOR_FIELDS:
                obj = dict(c_fields(obj)).get(value)
            else:  # a torch module's submodule, parameter or buffer (``model.fc1``)
                obj = next((r[value] for r in module_registries(d) if value in r), None)
        elif kind == "lrucache":
            obj = lru_cache_dict(obj)
        elif kind == "key" and type(obj) in CONTAINER_TYPES and type(obj) is not set:
            try:
                obj = obj[value] if value in obj else None
            except Exception:  # noqa: BLE001
                return None
        elif kind in ("closure", "default") and type(obj) is types.FunctionType:
            obj = _function_part(obj, kind, value)
        elif kind == "genlocal" and type(obj) is types.GeneratorType:
            from . import frames

            frame = obj.gi_frame
            whose = frames.generator_whose(obj)
            obj = frames.read_local(frame, value, whose) if frame is not None else None
        elif kind == "classattr" and type in mro(type(obj)):
            obj = type_dict(obj).get(value)
        elif kind == "cvdefault" and type(obj) is contextvars.ContextVar:
            obj = cvar_default(obj)
        elif kind == "cycled":
            obj = cycle_saved(obj)
        elif kind == "tls" and _thread._local in mro(type(obj)):
            per_thread = thread_local_dicts(obj)
            i, name = value
            obj = per_thread[i].get(name) if i < len(per_thread) else None
        else:
            return None
    return obj


def _function_part(fn: types.FunctionType, kind: str, name: Any) -> Any:
    code = fn.__code__
    if kind == "closure":
        for var, cell in zip(code.co_freevars, fn.__closure__ or ()):
            if var == name:
                try:
                    return cell.cell_contents
                except ValueError:
                    return None
        return None
    defaults = fn.__defaults__ or ()
    params = code.co_varnames[code.co_argcount - len(defaults) : code.co_argcount]
    for p, v in zip(params, defaults):
        if p == name:
            return v
    return (fn.__kwdefaults__ or {}).get(name)
