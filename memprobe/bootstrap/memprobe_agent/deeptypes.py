"""How the deep size sees a type (deepsize.py): which builtin base an object is sized as
and how its items are read, its kind (atom, tensor, array, opaque, container, object), the
base's own size and the values of its ``__slots__``. Only ``type()``, C getters and builtin
``__sizeof__`` run: never a method of the program's classes."""

from __future__ import annotations

import collections
import sys
import types
from typing import Any, Dict, List, Optional

from .typeinfo import mro, type_dict

GC_HEADER = 16
_BASICSIZE = type.__dict__["__basicsize__"]
_ATOMS = frozenset([int, float, complex, bool, str, bytes, bytearray, type(None), range])
# builtin bases and how their items are read: a subclass of one is sized as it is
BASES: Dict[type, str] = {
    list: "seq",
    tuple: "seq",
    collections.deque: "iter",
    set: "iter",
    frozenset: "iter",
    dict: "map",
}
# never walked into: not what an object holds (and each reaches a whole program)
_OPAQUE = frozenset(
    [
        type,
        types.ModuleType,
        types.FunctionType,
        types.BuiltinFunctionType,
        types.MethodType,
        types.CodeType,
        types.FrameType,
        types.TracebackType,
        types.GeneratorType,
        types.CoroutineType,
        staticmethod,
        classmethod,
        property,
    ]
)


def builtin_base(cls: type) -> Optional[type]:
    for b in mro(cls):
        if b in BASES:
            return b
    return None


def classify(cls: type, kinds: Dict[type, str]) -> str:
    """atom | tensor | ndarray | opaque | seq | iter | map | obj, from the type alone."""
    if cls in _ATOMS:
        return "atom"
    for b in mro(cls):
        kind = kinds.get(b) or BASES.get(b)
        if kind is not None:
            return kind
        if b in _OPAQUE:
            return "opaque"
    return "obj"


def builtin_sizeof(obj: Any, cls: type) -> int:
    """The builtin base's own ``__sizeof__`` (never a subclass' override) plus the GC header."""
    for b in mro(cls):
        if b in BASES:
            base: Any = b
            try:
                return int(base.__sizeof__(obj)) + GC_HEADER
            except Exception:  # noqa: BLE001
                break
    return basicsize(cls) + GC_HEADER


def basicsize(cls: type) -> int:
    try:
        return int(_BASICSIZE.__get__(cls, type))
    except Exception:  # noqa: BLE001
        return 0


def slot_values(obj: Any, cls: type) -> List[Any]:
    """Values of ``__slots__`` members, read through their C member descriptors."""
    out: List[Any] = []
    for b in mro(cls):
        if b in BASES or b is object:
            continue
        for name, desc in list(type_dict(b).items()):
            if type(desc) is types.MemberDescriptorType and name not in ("__weakref__",):
                try:
                    out.append(desc.__get__(obj, cls))
                except Exception:  # noqa: BLE001 - an empty slot
                    continue
    return out


def kinds() -> Dict[type, str]:
    out: Dict[type, str] = {}
    torch = sys.modules.get("torch")
    tensor = torch.__dict__.get("Tensor") if torch is not None else None
    if isinstance(tensor, type):
        out[tensor] = "tensor"
    np = sys.modules.get("numpy")
    ndarray = np.__dict__.get("ndarray") if np is not None else None
    if isinstance(ndarray, type):
        out[ndarray] = "ndarray"
    return out
