"""A DataLoader worker's dataset: the lengths of its containers, without touching the heap.

The census is off in forked workers (it would reference every object and copy
every page the worker shares with its parent). But a worker's leak is most often
a list or dict on the dataset object that ``__getitem__`` appends to, and torch
hands the worker its dataset: ``torch.utils.data.get_worker_info().dataset``
(read here from the module's ``_worker_info`` global, never by calling torch).
Looking at that object's own ``__dict__`` and taking ``len()`` of the containers
in it (and one level further down, for a wrapper such as ``Subset``) touches a
few object headers, not the dataset's items. Each container that has grown is
reported as ``container:dataset.<attribute>:len``, at the cheap-sample pace.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Set, Tuple

from .containertypes import CONTAINER_TYPES
from .typeinfo import instance_dict

MAX_CONTAINERS = 8


class GrownLengths:
    """The lengths of containers another process keeps for others, reported from the first
    change on (a container that never changes is no series)."""

    def __init__(self) -> None:
        self.first: Dict[str, int] = {}
        self.grown: Set[str] = set()

    def add(self, out: Dict[str, float], holder: str, obj: Any) -> None:
        """Put ``container:<holder>:len`` in ``out`` once ``obj``'s length has changed."""
        if type(obj) not in CONTAINER_TYPES:
            return
        n = len(obj)
        if n != self.first.setdefault(holder, n):
            self.grown.add(holder)
        if holder in self.grown:
            out[f"container:{holder}:len"] = n


class DatasetWatch:
    def __init__(self) -> None:
        self.paths: Optional[List[Tuple[str, List[str]]]] = None  # (holder, attribute chain)
        self.lengths = GrownLengths()

    def poll(self) -> Dict[str, float]:
        dataset = _dataset()
        if dataset is None:
            return {}
        if not self.paths:  # looked for until one exists (a cache made on first use)
            self.paths = _container_paths(dataset)
        out: Dict[str, float] = {}
        for holder, chain in self.paths:
            self.lengths.add(out, holder, _follow(dataset, chain))
        return out


def _dataset() -> Any:
    mod = sys.modules.get("torch.utils.data._utils.worker")
    info = mod.__dict__.get("_worker_info") if mod is not None else None
    if info is None or type(info).__name__ != "WorkerInfo":
        return None
    d = instance_dict(info)
    if d is not None:
        return d.get("dataset")
    slot = type(info).__dict__.get("dataset")
    if slot is not None and type(slot).__name__ == "member_descriptor":
        try:
            return slot.__get__(info, type(info))
        except AttributeError:
            return None
    return None


def _container_paths(dataset: Any) -> List[Tuple[str, List[str]]]:
    out: List[Tuple[str, List[str]]] = []
    d = instance_dict(dataset)
    for name, value in list(d.items()) if d else []:
        if len(out) >= MAX_CONTAINERS or not isinstance(name, str):
            break
        if type(value) in CONTAINER_TYPES:
            out.append((f"dataset.{name}", [name]))
            continue
        inner = instance_dict(value)  # a wrapper (Subset, ConcatDataset...): one more level
        for sub, v in list(inner.items()) if inner else []:
            if type(v) in CONTAINER_TYPES and isinstance(sub, str) and len(out) < MAX_CONTAINERS:
                out.append((f"dataset.{name}.{sub}", [name, sub]))
    return out


def _follow(obj: Any, chain: List[str]) -> Any:
    for name in chain:
        d = instance_dict(obj)
        if d is None:
            return None
        obj = d.get(name)
    return obj
