"""Type objects read without running their code: a name, an MRO, a namespace, an instance's
``__dict__``, whether a type is a heap type, and which present types are tensors, arrays,
modules and figures; and what a few C objects of the standard library keep (a
``ContextVar``'s default, an ``itertools.cycle``'s saved items, a ``threading.local``'s
per-thread dicts).

Attributes are read through ``type``'s own descriptors, so a metaclass cannot intercept
them (see census.py).
"""

from __future__ import annotations

import contextvars
import gc
import itertools
import sys
import types
import weakref
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

_TYPE_MODULE = type.__dict__["__module__"]
_TYPE_QUALNAME = type.__dict__["__qualname__"]
_TYPE_MRO = type.__dict__["__mro__"]
_TYPE_DICT = type.__dict__["__dict__"]


# ``id()`` raises the audit event "builtins.id" (PEP 578): in a program that installed Python
# audit hooks (``sys.addaudithook``) every call runs each of them, and a census makes tens of
# thousands of calls. ``object.__hash__`` is the same identity for a live object (its address,
# rotated: one number per object) and raises none.
ident: Callable[[object], int] = object.__hash__


def type_name(cls: type) -> str:
    """``module.QualName`` read through ``type``'s own descriptors (no metaclass code runs)."""
    try:
        mod = _TYPE_MODULE.__get__(cls, type)
        qual = _TYPE_QUALNAME.__get__(cls, type)
    except Exception:  # noqa: BLE001
        return "?"
    if not isinstance(mod, str) or mod == "builtins":
        return str(qual)
    return f"{mod}.{qual}"


def qual_name(cls: type) -> str:
    """``QualName`` (no module) through ``type``'s own descriptor, or "?"."""
    try:
        qual = _TYPE_QUALNAME.__get__(cls, type)
    except Exception:  # noqa: BLE001
        return "?"
    return qual if isinstance(qual, str) else "?"


def mro(cls: type) -> Tuple[type, ...]:
    try:
        value = _TYPE_MRO.__get__(cls, type)
    except Exception:  # noqa: BLE001
        return ()
    return value if isinstance(value, tuple) else ()


def loaded_class(module: str, name: str) -> Optional[type]:
    """A class of a module the target has imported (``numpy.ndarray``, ``weakref.finalize``),
    without importing it; None when the module is not loaded or has no such class."""
    mod = sys.modules.get(module)
    cls = vars(mod).get(name) if isinstance(mod, types.ModuleType) else None
    return cls if isinstance(cls, type) else None


def type_dict(cls: type) -> Any:
    """A class' own namespace (a read-only mapping), without metaclass code."""
    try:
        return _TYPE_DICT.__get__(cls, type)
    except Exception:  # noqa: BLE001
        return {}


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


_MODULE_REGISTRIES = ("_modules", "_parameters", "_buffers")


def module_registries(d: Optional[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The dicts in which a torch module's instance ``__dict__`` ``d`` keeps its submodules,
    parameters and buffers (what ``model.fc1`` reads through ``Module.__getattr__``), or
    none for any other object's."""
    if d is None or type(d.get("_modules")) is not dict or type(d.get("_parameters")) is not dict:
        return []
    return [r for r in map(d.get, _MODULE_REGISTRIES) if type(r) is dict]


class Kinds:
    """Which present types are tensors, arrays, modules, figures (computed per census)."""

    def __init__(self, present: Any) -> None:
        torch = sys.modules.get("torch")
        bases: Dict[str, Any] = {}
        if torch is not None:
            bases["tensor"] = torch.__dict__.get("Tensor")
            mod = sys.modules.get("torch.nn.modules.module")
            bases["module"] = mod.__dict__.get("Module") if mod is not None else None
        np = sys.modules.get("numpy")
        if np is not None:
            bases["ndarray"] = np.__dict__.get("ndarray")
        fig = sys.modules.get("matplotlib.figure")
        if fig is not None:
            bases["figure"] = fig.__dict__.get("Figure")
        self.of: Dict[type, str] = {}
        wanted = {b: k for k, b in bases.items() if isinstance(b, type)}
        if not wanted:
            return
        for cls in present:
            for base in mro(cls):
                kind = wanted.get(base)
                if kind is not None:
                    self.of[cls] = kind
                    break
        param = None
        if torch is not None:
            nn_param = sys.modules.get("torch.nn.parameter")
            param = nn_param.__dict__.get("Parameter") if nn_param is not None else None
        self.param_types: Set[type] = {
            c for c, k in self.of.items() if k == "tensor" and param in mro(c)
        }


_FLAGS = type.__dict__["__flags__"]
_HEAPTYPE = 1 << 9


def is_heap_type(cls: type) -> bool:
    """Instances of a heap type hold a reference to it: ``sys.getrefcount(cls)`` counts them."""
    try:
        return bool(_FLAGS.__get__(cls, type) & _HEAPTYPE)
    except Exception:  # noqa: BLE001
        return False


def cvar_default(var: Any) -> Any:
    """A ``contextvars.ContextVar``'s default, or None: what ``get()`` returns in a context
    that never set it (a fresh, empty one; C code only). A default that is a mutable list
    is one object shared by every context that never set its own: a per-request trace
    declared ``ContextVar("trace", default=[])`` gathers every request's spans."""
    try:
        return contextvars.Context().run(var.get)
    except LookupError:
        return None


_UNSET = object()


def cvar_current(var: Any, default: Any) -> Any:
    """A ``contextvars.ContextVar``'s value in the calling thread's context when it is not
    the default, else None (C code only). A census at a step boundary runs in the thread
    that steps: a ``ContextVar`` set there and never reset (``token`` lost on an error
    path) keeps its value for the rest of the run. From the agent's own thread, whose
    context the target never set, this is None. ``default``: its ``cvar_default``."""
    try:
        value = var.get(_UNSET)
    except Exception:  # noqa: BLE001
        return None
    if value is _UNSET or value is None or value is default:
        return None
    return value


def cycle_saved(it: Any) -> Any:
    """The list an ``itertools.cycle`` keeps of every item its first pass yielded, or None
    (gc's view of the object: C code only). Over an iterable longer than the run, that pass
    never ends: ``itertools.cycle(loader)`` keeps every batch it handed out."""
    if type(it) is not itertools.cycle:
        return None
    for ref in gc.get_referents(it):
        if type(ref) is list:
            return ref
    return None


def thread_local_dicts(local: Any) -> List[Dict[Any, Any]]:
    """A ``threading.local``'s attribute dicts, one per thread that set an attribute, in the
    order those threads first did. Read from inside, each thread sees its own only (the
    agent's thread: none); the object keeps them in a dict keyed by weak references, which
    its C traversal hands to the collector (``gc.get_referents``: no Python code runs)."""
    out: List[Dict[Any, Any]] = []
    for ref in gc.get_referents(local):
        if type(ref) is not dict:
            continue
        try:
            items = list(ref.items())
        except RuntimeError:  # a thread started or ended under us
            continue
        out.extend(d for k, d in items if type(k) is weakref.ReferenceType and type(d) is dict)
    return out
