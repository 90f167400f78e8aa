"""``functools.lru_cache`` wrappers read without running their code: the cache dict (a C
field only gc sees) and the ``maxsize`` that bounds it."""

from __future__ import annotations

import functools
import gc
import types
from typing import Any, Optional

from .typeinfo import instance_dict

# functools.lru_cache's wrapper (a C type): its cache is a dict only gc can see
LRU_WRAPPER: Any = getattr(functools, "_lru_cache_wrapper", None)


def lru_cache_dict(wrapper: Any) -> Any:
    """The cache of a ``functools.lru_cache`` wrapper: the dict gc sees it refer to that is
    not its ``__dict__`` (C code of the standard library; nothing of the target runs)."""
    if LRU_WRAPPER is None or type(wrapper) is not LRU_WRAPPER:
        return None
    own = instance_dict(wrapper)
    for ref in gc.get_referents(wrapper):
        if type(ref) is dict and ref is not own:
            return ref
    return None


def lru_maxsize(wrapper: Any) -> Optional[int]:
    """The ``maxsize`` of a ``functools.lru_cache`` wrapper, None when unbounded (or not
    one). Read from the closure of the ``cache_parameters`` function functools sets on the
    wrapper: a cell read, no code runs."""
    if LRU_WRAPPER is None or type(wrapper) is not LRU_WRAPPER:
        return None
    d = instance_dict(wrapper)
    fn = d.get("cache_parameters") if d is not None else None
    if type(fn) is not types.FunctionType:
        return None
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        if name != "maxsize":
            continue
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            return None
        bounded = type(value) is int and value > 0
        return value if bounded else None
    return None
