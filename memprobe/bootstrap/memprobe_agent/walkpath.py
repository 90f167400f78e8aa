"""The path a top-down walk (roots.py) took to what it found, made into a holder.

The walk keeps each queued object's path as a linked chain of ``(step, parent, owner)``
triples, ``owner`` the class of the object whose attribute the step reads (None for other
steps): tens of thousands of objects are queued in a walk, few are found, and only theirs
become lists and text here.
"""

from __future__ import annotations

import weakref
from typing import Any, Dict, List, Optional, Tuple

from .holders import FOLLOWABLE, Step, result
from .typeinfo import qual_name


def steps_of(path: Any) -> List[Step]:
    """The steps of a linked ``(step, parent, owner)`` path, root first."""
    out: List[Step] = []
    while path is not None:
        step, path, _ = path
        out.append(step)
    out.reverse()
    return out


def owners_of(path: Any) -> List[str]:
    """``Class.attribute`` for each attribute step of a linked path, root first: what the
    code calls it where the variable's name says little (``main:prof.records`` reads
    ``CallProfiler.records``; ``main:dash.ax_attn._children``, ``TrainingDashboard.ax_attn``
    then ``Axes._children``)."""
    out: List[str] = []
    while path is not None:
        (kind, name), path, owner = path
        if owner is not None and kind == "attr" and isinstance(name, str):
            out.append(f"{qual_name(owner)}.{name}")
    out.reverse()
    return out


def found_at(
    label: str,
    origin: Optional[Tuple[Any, ...]],
    steps: List[Step],
    anchor: Any,
    owners: Optional[List[str]] = None,
) -> Dict[str, Any]:
    root = label
    skip = 0
    if steps and steps[0][0] == "local":  # a frame local starts the path: file:function:name
        root, skip = f"{label}:{steps[0][1]}", 1
        origin = (*origin, steps[0][1]) if origin is not None else None
        steps = steps[1:]
    res = result(root, origin, steps, True, skip == 1)
    if owners:
        res["owners"] = owners
    if anchor is not None:
        obj, at = anchor
        rest = steps[at - skip :]
        if at >= skip and all(s[0] in FOLLOWABLE for s in rest):
            # followed from the object, not the root: cheaper, and it outlives nothing
            res["anchor"] = (weakref.ref(obj), [list(s) for s in rest])
    return res
