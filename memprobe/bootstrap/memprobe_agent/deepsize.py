"""Deep size of a watched object (``memprobe.watch``): bounded in time, shared things once.

What is counted: builtin containers (and subclasses of them) with their items,
instances of the program's classes with their ``__dict__`` and ``__slots__``,
strings and numbers, each tensor's storage once (by device and base address:
views and a tensor shared by many items count once, for as far as any view
reaches), each NumPy array's buffer once (a view counts its base array). Not
counted: modules, classes, functions and code (they are not what an object
holds), and what an autograd graph saves in C++ (Python cannot see it). Only
``type()``, C getters and builtin ``__sizeof__`` run: never a method of the
program's classes, and torch is never imported (tensors are recognised by the
type that ``sys.modules["torch"]`` already has).

Cost is bounded whatever the object's size:

- a container of at most ``ITEMS`` items is walked whole; a larger one is walked on
  ``ITEMS / 2 .. ITEMS`` items taken every ``stride``-th (a power of two), and the
  bytes those items hold alone are scaled up to the container's length. The stride
  only changes when the length doubles, so a list that grows at its end is measured
  on the same items from one sample to the next: its estimate moves by the new
  items, not by which items happened to be picked;
- what two sampled items of one container both reach (one tensor storage behind
  views, one object put in many times, a shared config) is counted once and not
  scaled up;
- the walk stops ``MAX_DEPTH`` levels down and at a deadline; the estimate then
  covers what was walked, and ``exact`` is False.

A list of 10^6 items costs ~0.3 ms this way, a list of 10^3 tensors ~2 ms (see the
README); an exact walk of the same list would cost about a second.
"""

from __future__ import annotations

import itertools
import sys
import time
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from .deeptypes import (
    BASES,
    GC_HEADER,
    basicsize,
    builtin_base,
    builtin_sizeof,
    classify,
    kinds,
    slot_values,
)
from .sizes import tensor_extent, torch_function_off
from .typeinfo import ident, instance_dict

ITEMS = 256  # items walked per container; a longer one is sampled
MIN_ITEMS = 16  # items of the outermost sampled container walked even past the deadline
MAX_DEPTH = 8
DEADLINE_S = 0.02
_PLAIN_KEYS = frozenset([int, str, float, bytes, bool, type(None)])


class Estimate(NamedTuple):
    bytes: int
    exact: bool
    visited: int
    seconds: float


class _Frame:
    """A container being sampled: its current item, and what its items share."""

    __slots__ = ("token", "item", "shared", "moved")

    def __init__(self, token: int) -> None:
        self.token = token
        self.item = 0
        self.shared = 0.0
        self.moved: Dict[Any, float] = {}


class _Seen:
    """Where a counted thing was first reached: the sampled items it hangs under
    ((frame token, item) per open frame), its bytes, and the key it was reached from."""

    __slots__ = ("path", "bytes", "parent")

    def __init__(self, path: Tuple[Tuple[int, int], ...], parent: Any) -> None:
        self.path = path
        self.bytes = 0.0
        self.parent = parent


class _Walk:
    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.seen: Dict[Any, _Seen] = {}
        self.frames: List[_Frame] = []
        self.tokens = itertools.count()
        self.visits = 0
        self.exact = True
        self.kinds = kinds()
        self.classes: Dict[type, str] = {}

    # -- bookkeeping of what was reached before ---------------------------------------------

    def _first(self, key: Any, parent: Any) -> Optional[_Seen]:
        """A record for ``key`` seen for the first time, or None (seen before: then shared
        between two sampled items is noted)."""
        rec = self.seen.get(key)
        if rec is None:
            rec = self.seen[key] = _Seen(tuple((f.token, f.item) for f in self.frames), parent)
            return rec
        self._again(key, rec)
        return None

    def _again(self, key: Any, rec: _Seen) -> None:
        # the innermost open frame the first reach also hung under decides: another item of
        # it reaches this too, so it is shared by its items (counted once, not scaled)
        for level in range(min(len(self.frames), len(rec.path)) - 1, -1, -1):
            frame = self.frames[level]
            if rec.path[level][0] != frame.token:
                continue
            if rec.path[level][1] != frame.item:
                self._share(frame, key, rec)
            return

    def _share(self, frame: _Frame, key: Any, rec: _Seen) -> None:
        if key in frame.moved or self._under_moved(frame, rec.parent):
            return
        for other in list(frame.moved):  # already moved things below this one: it holds them
            if self._under(other, key):
                frame.shared -= frame.moved.pop(other)
        frame.moved[key] = rec.bytes
        frame.shared += rec.bytes

    def _under_moved(self, frame: _Frame, parent: Any) -> bool:
        for _ in range(MAX_DEPTH + 2):
            if parent is None:
                return False
            if parent in frame.moved:
                return True
            rec = self.seen.get(parent)
            parent = rec.parent if rec is not None else None
        return False

    def _under(self, key: Any, ancestor: Any) -> bool:
        rec = self.seen.get(key)
        for _ in range(MAX_DEPTH + 2):
            if rec is None or rec.parent is None:
                return False
            if rec.parent == ancestor:
                return True
            rec = self.seen.get(rec.parent)
        return False

    # -- the walk ---------------------------------------------------------------------------

    def size(self, obj: Any, depth: int, parent: Any) -> float:
        cls = type(obj)
        kind = self.classes.get(cls)
        if kind is None:
            kind = self.classes[cls] = classify(cls, self.kinds)
        if kind == "tensor":
            return self._tensor(obj, parent)
        if kind == "ndarray":
            return self._array(obj, parent)
        if kind == "opaque":
            return 0.0
        key = ident(obj)
        rec = self._first(key, parent)
        if rec is None:
            return 0.0
        self.visits += 1
        if kind == "atom":
            rec.bytes = float(sys.getsizeof(obj))
            return rec.bytes
        if depth > MAX_DEPTH or (self.visits & 63 == 0 and time.perf_counter() > self.deadline):
            self.exact = False
            return 0.0
        total = self._own(obj, cls, kind, depth, key)
        rec.bytes = total
        return total

    def _own(self, obj: Any, cls: type, kind: str, depth: int, key: int) -> float:
        if kind in ("seq", "iter", "map"):
            total = float(builtin_sizeof(obj, cls)) + self._items(obj, kind, depth, key)
        else:
            total = float(basicsize(cls) + GC_HEADER)
        if cls not in BASES:  # an instance of the program's class (or a builtin's subclass)
            d = instance_dict(obj)
            if d is not None:
                total += sys.getsizeof(d) + self._each(list(d.values()), depth, key)
            slots = slot_values(obj, cls)
            if slots:
                total += self._each(slots, depth, key)
        return total

    def _each(self, items: List[Any], depth: int, parent: Any) -> float:
        return sum(self.size(i, depth + 1, parent) for i in items)

    def _items(self, obj: Any, base: str, depth: int, key: int) -> float:
        builtin: Any = builtin_base(type(obj))
        try:
            n = builtin.__len__(obj) if builtin is not None else 0
        except Exception:  # noqa: BLE001
            return 0.0
        if n == 0 or builtin is None:
            return 0.0
        stride = 1
        while (n + stride - 1) // stride > ITEMS:
            stride *= 2
        try:
            picked = _pick(obj, builtin, stride)
        except Exception:  # noqa: BLE001 - changed size under us (another thread)
            self.exact = False
            return 0.0
        if stride == 1:
            if base == "map":
                return sum(self._each(list(kv), depth, key) for kv in picked)
            return self._each(picked, depth, key)
        self.exact = False
        frame = _Frame(next(self.tokens))
        self.frames.append(frame)
        total, done = 0.0, 0
        try:
            for i, item in enumerate(picked):
                frame.item = i
                total += (
                    self._each(list(item), depth, key)
                    if base == "map"
                    else self.size(item, depth + 1, key)
                )
                done += 1
                # past the deadline: stop, but the outermost sampled container gets a few
                # items whatever it costs (the items it has are what the estimate scales)
                least = MIN_ITEMS if len(self.frames) == 1 else 1
                if done >= least and time.perf_counter() > self.deadline:
                    break
        finally:
            self.frames.pop()
        if done == 0:
            return 0.0
        own = max(0.0, total - frame.shared)
        return frame.shared + own * (n / done)

    def _tensor(self, t: Any, parent: Any) -> float:
        ext = tensor_extent(t)
        if ext is None:
            return 0.0
        (device, base), nbytes = ext
        key = ("storage", device, base)
        rec = self.seen.get(key)
        if rec is None:
            rec = self._first(key, parent)
            assert rec is not None
            rec.bytes = float(nbytes)
            return float(nbytes)
        self._again(key, rec)
        grown = float(nbytes) - rec.bytes
        if grown <= 0:
            return 0.0
        # a view reaching further into a storage seen before: the extra bytes, and they are
        # shared wherever the storage already is
        rec.bytes = float(nbytes)
        for frame in self.frames:
            if key in frame.moved:
                frame.moved[key] += grown
                frame.shared += grown
        return grown

    def _array(self, a: Any, parent: Any) -> float:
        root = a
        for _ in range(8):  # a view's bytes are its base array's, counted once
            base = root.base
            if base is None or type(base) is not type(root):
                break
            root = base
        rec = self._first(("array", ident(root)), parent)
        if rec is None:
            return 0.0
        try:
            rec.bytes = float(root.nbytes)
        except Exception:  # noqa: BLE001
            rec.bytes = 0.0
        return rec.bytes


def deep_size(obj: Any, deadline_s: float = DEADLINE_S) -> Estimate:
    """What ``obj`` holds, in bytes: exact for small objects, sampled for large ones."""
    t0 = time.perf_counter()
    walk = _Walk(t0 + deadline_s)
    with torch_function_off():
        total = walk.size(obj, 0, None)
    return Estimate(int(total), walk.exact, walk.visits, time.perf_counter() - t0)


def _pick(obj: Any, builtin: Any, stride: int) -> List[Any]:
    """Every ``stride``-th item (all when 1), read in C through the builtin base's own
    methods (never a subclass' override): atomic against the program's other threads."""
    if builtin is dict:
        if stride == 1:
            return list(dict.items(obj))
        # the keys alone iterate ~3x faster than items (no tuple per entry); the values of
        # keys whose hash and equality are builtin are then looked up, the rest read as items
        keys = list(itertools.islice(dict.keys(obj), 0, None, stride))
        if all(type(k) in _PLAIN_KEYS for k in keys):
            get = dict.get
            missing = object()
            pairs = [(k, get(obj, k, missing)) for k in keys]
            return [kv for kv in pairs if kv[1] is not missing]
        return list(itertools.islice(dict.items(obj), 0, None, stride))
    if builtin in (list, tuple):
        return list(builtin.__getitem__(obj, slice(None, None, stride)))
    return list(itertools.islice(builtin.__iter__(obj), 0, None, stride))
