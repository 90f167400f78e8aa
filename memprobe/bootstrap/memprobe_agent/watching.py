"""``memprobe.watch(name, obj)``: a named object's deep size and length as series of the run.

Signals: ``watch:<name>:bytes`` (deep size, see deepsize.py) and ``watch:<name>:len``
(``len()``, where the object has one). The length is read at every cheap sample
(a C call); the deep size when its own pace allows: after a measurement that took
``c`` seconds, the next one waits ``c × watches / budget`` (at least one sample
interval), so all watches together stay under the run's overhead budget (3 % by
default) however big the object is, and one measurement is capped by deepsize's
deadline.

Never keeping alive what the program dropped: the object is held by a weak
reference where its type allows one (instances of the program's classes, deques,
sets, tensors, arrays). Builtin lists, dicts and tuples cannot be weakly
referenced; memprobe then holds one strong reference and lets go of it as soon
as ``sys.getrefcount`` says that reference is the last (checked at every sample).
A list that only a reference cycle keeps alive still holds one more reference
than ours: it stays alive (and measured) until the end of the run.

A ``__len__`` written in Python (a replay buffer class) is called only from the
thread that called ``watch``, at its step boundaries, never from memprobe's own
thread; a C one (list, dict, deque) from either.
"""

from __future__ import annotations

import sys
import threading
import time
import types
import weakref
from typing import Any, Callable, Dict, List, Optional

from . import deepsize, deeptypes
from .typeinfo import mro, type_dict

MAX_WATCHES = 32
MAX_NAME = 80


class Watch:
    def __init__(self, name: str, obj: Any) -> None:
        self.name = name
        self.bytes_signal = f"watch:{name}:bytes"
        self.len_signal = f"watch:{name}:len"
        self.type_name = _type_name(type(obj))
        self.owner = threading.get_ident()
        self.dead = False
        self._ref: Optional[Callable[[], Any]] = None
        self._strong: Any = None
        try:
            self._ref = weakref.ref(obj, self._gone)
            self.held = "weakref"
        except TypeError:
            self._strong = obj
            self.held = "strong"
        self.len_fn = _len_fn(type(obj))
        self.due = 0.0
        self.cost = 0.0
        self.exact = True

    def _gone(self, ref: Any) -> None:
        # may run in any thread, inside a gc pass: only a flag here, the event comes later
        self.dead = True

    def get(self) -> Any:
        if self._ref is not None:
            return self._ref()
        if self._strong is not None and sys.getrefcount(self._strong) <= 2:
            # the attribute and getrefcount's own argument: the program has dropped it
            self._strong = None
            self.dead = True
        return self._strong

    def read_len(self, obj: Any, on_owner: bool) -> Optional[int]:
        fn = self.len_fn
        if fn is None or (fn is not len and not on_owner):
            return None
        try:
            n = fn(obj) if fn is not len else len(obj)
        except Exception:  # noqa: BLE001 - its own __len__ raised: no length series
            self.len_fn = None
            return None
        return n if isinstance(n, int) and not isinstance(n, bool) else None


class Watches:
    """The named objects of one process, sampled with every cheap sample."""

    def __init__(self, budget: float, interval: float, event: Callable[[str, str], None]) -> None:
        self.budget = max(1e-3, budget)
        self.interval = interval
        self.event = event
        self.items: Dict[str, Watch] = {}
        self._lock = threading.Lock()

    def add(self, name: Any, obj: Any) -> None:
        label = _clean(name)
        with self._lock:
            if label not in self.items and len(self.items) >= MAX_WATCHES:
                refused = True
            else:
                refused = False
                w = Watch(label, obj)
                self.items[label] = w
        if refused:
            self.event(
                "watch_refused",
                f"memprobe.watch({label!r}): {MAX_WATCHES} watches already; not followed",
            )
            return
        how = (
            "held by a weak reference"
            if w.held == "weakref"
            else "held by one reference, released once the program drops it"
        )
        self.event("watch", f"watching `{label}` ({w.type_name}, {how})")

    def sample(self, out: Dict[str, Any], now: float) -> None:
        with self._lock:
            watches = list(self.items.values())
        if not watches:
            return
        me = threading.get_ident()
        for w in watches:
            obj = w.get()
            if obj is None:
                if w.dead:
                    with self._lock:
                        if self.items.get(w.name) is w:
                            del self.items[w.name]
                    self.event("watch_freed", f"watched `{w.name}` was freed; its series end")
                continue
            n = w.read_len(obj, w.owner == me)
            if n is not None:
                out[w.len_signal] = n
            if now >= w.due:
                est = deepsize.deep_size(obj)
                out[w.bytes_signal] = est.bytes
                w.cost = est.seconds
                w.exact = w.exact and est.exact
                gap = est.seconds * len(watches) / self.budget
                w.due = time.monotonic() + max(self.interval, gap)
            obj = None


def _clean(name: Any) -> str:
    text = name if isinstance(name, str) else repr(name)
    text = "".join(ch if ch.isprintable() else "?" for ch in text).strip()
    return text[:MAX_NAME] or "?"


def _type_name(cls: type) -> str:
    mod = type_dict(cls).get("__module__")
    qual = type_dict(cls).get("__qualname__")
    name = qual if isinstance(qual, str) else cls.__name__
    return name if mod in (None, "builtins") or not isinstance(mod, str) else f"{mod}.{name}"


def _len_fn(cls: type) -> Optional[Callable[[Any], Any]]:
    """``len`` where the type's ``__len__`` is C code; the Python function where it is the
    program's own; None where it has none (and for tensors and arrays: their length is
    their first dimension, a shape, not what they hold)."""
    if deeptypes.classify(cls, deeptypes.kinds()) in ("tensor", "ndarray"):
        return None
    for base in mro(cls):
        fn = type_dict(base).get("__len__")
        if fn is None:
            continue
        return fn if isinstance(fn, types.FunctionType) else len
    return None


def names(watches: Optional[Watches]) -> List[str]:
    return sorted(watches.items) if watches is not None else []
