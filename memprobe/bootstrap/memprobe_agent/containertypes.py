"""Which objects a census counts as containers, and how their items are read: the
builtin containers and their subclasses that read as they do. Only ``type()`` and the
types' own namespaces are asked: no code of the program's classes runs."""

from __future__ import annotations

import collections
import itertools
import sys
import types
from typing import Any, List, Optional, Set

from . import wire
from .typeinfo import mro, type_dict, type_name

# the dicts whose last items are read in insertion order (elem_types)
DICT_TYPES = (dict, collections.OrderedDict, collections.defaultdict)
CONTAINER_TYPES = frozenset(
    [list, dict, set, collections.deque, collections.OrderedDict, collections.defaultdict]
)
_CONTAINER_BASES = tuple(CONTAINER_TYPES)
# how a container's items and length are read (len, elem_types, the watch's counts and
# sizes): a subclass that defines none of them reads as its base, all in C
_READS = ("__len__", "__getitem__", "__iter__", "__reversed__", "keys", "values", "items", "maxlen")
NUMBER_FIELDS = 8  # a record of this many plain numbers or fewer: ``(step, loss, lr)``


def container_base(cls: type) -> Optional[type]:
    """The container type (``CONTAINER_TYPES``) that ``cls`` is, or subclasses without
    defining how its items are read (``collections.Counter``, ``unittest.mock``'s
    ``_CallList``, a program's ``class History(list)``); None for any other class. Read from
    the types' own namespaces: no code of the class runs."""
    if cls in CONTAINER_TYPES:
        return cls
    for base in mro(cls):
        if base in CONTAINER_TYPES:
            return base
        own = type_dict(base)
        if any(name in own for name in _READS):
            return None
    return None


def container_subclasses(classes: Any) -> Set[type]:
    """Of ``classes`` (a census' types), the container subclasses ``container_base``
    reads as their base."""
    return {
        cls
        for cls in classes
        if cls not in CONTAINER_TYPES
        and issubclass(cls, _CONTAINER_BASES)
        and container_base(cls) is not None
    }


def elem_types(container: Any, limit: int = 3, keys: bool = False) -> List[str]:
    """Types of a container's last few items (values for a dict), by ``type()`` only.
    ``keys``: a dict's last few keys instead, none for any other container (a dict keyed by
    text or tuples holds its keys' bytes as it grows, whatever its values are: a cache keyed
    by each input's text, the ``__warningregistry__`` that ``warnings`` fills with every
    distinct message). A bound method counts as its object's type: it keeps that object."""
    cls = container_base(type(container))
    try:
        if keys and cls not in DICT_TYPES:
            items = []
        elif cls in (list, collections.deque):
            items = [container[i] for i in range(-min(limit, len(container)), 0)]
        elif cls in DICT_TYPES:
            view = container.keys() if keys else container.values()
            items = (
                list(itertools.islice(reversed(view), limit)) if sys.version_info >= (3, 8) else []
            )
        elif cls is set:
            items = list(itertools.islice(iter(container), limit))
        else:
            items = []
    except Exception:  # noqa: BLE001 - mutated under us by another thread
        return []
    out: List[str] = []
    for item in items:
        if type(item) is types.MethodType:  # a bound method keeps its object: named by it
            item = item.__self__  # (``gc.callbacks`` of ``job._on_gc``: ShardJob)
        name = wire.NUMBER_TUPLE if not keys and _numbers(item) else type_name(type(item))
        if name not in out:
            out.append(name)
    return out


def _numbers(item: Any) -> bool:
    """A tuple (a named one too) of a few plain numbers: a log's record, ``history.append(
    (step, loss.item()))``, as much a log of numbers as a list of floats is."""
    if not issubclass(type(item), tuple) or not 0 < len(item) <= NUMBER_FIELDS:
        return False
    return all(type_name(type(x)) in wire.SCALAR_TYPES for x in item)
