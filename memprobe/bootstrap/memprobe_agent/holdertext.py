"""A holder path's steps made into the text a person reads (``main:trainer.history``,
``__main__.CACHE['fc.stats']``, ``main:log:history``), and its parts."""

from __future__ import annotations

from typing import Any, List, Tuple

from .typeinfo import type_name


def render(root: str, steps: List[Tuple[str, Any]], attr_next: bool) -> Tuple[str, List[str]]:
    """(the holder as the code reads it, its parts) for a path's steps from ``root``
    (see holders.Step); ``attr_next``: a first key is an attribute (a module's or a class'
    namespace), not a key of a variable's value."""
    text = root
    chain = [root]
    # after a module, a class or an instance's __dict__, keys are attributes
    for kind, value in steps:
        if kind == "dictof":
            attr_next = True
            continue
        if kind == "attr" or kind == "classattr":
            part = f".{value}"
        elif kind == "key" and attr_next and isinstance(value, str):
            part = f".{value}"
        elif kind in ("closure", "genlocal"):
            part = f":{value}"  # a variable of the function, as file:function:local reads
        elif kind == "default":
            part = f"({value}=…)"
        elif kind == "cvdefault":
            part = "(default=…)"  # as it was made: ContextVar("trace", default=[])
        elif kind == "cvvalue":
            part = ".get()"  # what the code that set it reads back
        elif kind == "cycled":
            part = ".<cycle saved>"  # what itertools.cycle(...) keeps of its first pass
        elif kind == "self":
            part = ".__self__"  # the object of a bound method
        elif kind == "lrucache":
            part = ".<lru_cache>"
        elif kind == "lruitem":
            part = ".<lru_cache>[…]"
        elif kind == "tls":
            part = f".{value[1]}"  # as the code reads it (``self._local.spans``), one thread's
        elif kind == "index":
            part = f"[{value}]"
        else:
            part = f"[{_short_repr(value)}]"
        attr_next = False
        text += part
        chain.append(part)
    return text, chain


def _short_repr(value: Any) -> str:
    if type(value) in (str, int, float, bool, bytes) or value is None:
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return f"<{type_name(type(value))}>"
