"""Objects that keep many others alive without being containers, found from what they keep.

A ``pickle.Pickler`` reused for a whole stream keeps every object it wrote in its memo, a
C hash table: no list or dict grows, only the count of the objects it keeps (dicts of
arrays, one per record). The census then sees a type grow and nothing to name. When a
type grows census after census and no watched container explains it, a few of its
instances are taken (census.take's ``samples``) and their referrers read (one heap scan,
``gc.get_referrers``): a referrer that is no container, frame or function and refers to
``MIN_REFERENTS`` objects or more is such a keeper. It is watched like a container, its
length the number of objects it refers to, read through the collector's own traversal
(``gc.get_referents``: C only, no Python code of the target runs).
"""

from __future__ import annotations

import gc
import types
from typing import Any, Dict, List, Set

from . import tees, wire
from .census import qualified
from .containertypes import container_base
from .typeinfo import ident, type_name


def _cell_type() -> type:
    """``types.CellType``, which Python has from 3.8 only."""
    closure = (lambda v: lambda: v)(0).__closure__
    return type(closure[0]) if closure else type(None)


_CELL = _cell_type()
MIN_REFERENTS = 64
MAX_KEEPERS = 2  # keepers taken per census
# what keeps things by design, or is walked by other means: never a keeper
_NOT_KEEPERS = (
    type,
    types.FrameType,
    types.FunctionType,
    types.ModuleType,
    types.CodeType,
    types.GeneratorType,
    _CELL,
    tuple,
    frozenset,
)


def keepers(samples: Dict[str, List[Any]], exclude: Set[int]) -> List[Any]:
    """Of the referrers of ``samples``' instances, those that keep ``MIN_REFERENTS``
    objects or more and are no container (a list or dict is the container tracker's own)."""
    objs = [o for group in samples.values() for o in group]
    if not objs:
        return []
    mine = exclude | {ident(objs), ident(samples)} | {ident(g) for g in samples.values()}
    found: List[Any] = []
    seen: Set[int] = set()
    for ref in gc.get_referrers(*objs):
        rid = ident(ref)
        if rid in mine or rid in seen or not is_keeper_type(type(ref)):
            continue
        seen.add(rid)
        if count(ref) >= MIN_REFERENTS:
            found.append(ref)
            if len(found) >= MAX_KEEPERS:
                break
    objs.clear()
    return found


def is_keeper_type(cls: type) -> bool:
    """No container, array, tensor, tee branch or anything in ``_NOT_KEEPERS``."""
    if container_base(cls) is not None or cls is tees.TEE or issubclass(cls, _NOT_KEEPERS):
        return False
    return type_name(cls) not in (wire.NDARRAY, wire.TENSOR)


def count(obj: Any) -> int:
    """How many objects it refers to (what its ``tp_traverse`` visits)."""
    return len(gc.get_referents(obj))


def item_types(obj: Any, limit: int = 3) -> List[str]:
    """The types of the last few objects it refers to."""
    out: List[str] = []
    for item in reversed(gc.get_referents(obj)):
        name = qualified(item)
        if name not in out:
            out.append(name)
        if len(out) >= limit:
            break
    return out
