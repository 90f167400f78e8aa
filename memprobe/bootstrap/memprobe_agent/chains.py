"""A chain of objects of a growing type, each keeping the one before it.

``train_set = Subset(train_set, keep)`` every pruning round, a wrapper that wraps the last
wrapper: no container grows, the chain does, and each link may keep much (a ``Subset``'s
own list of indices). The census names the types that grow; this looks for their
instances a few steps below the user's roots (``roots.find_matching``) and, from each one
found, follows the attribute that leads to another object of its type, counting links.
Only ``type()`` and instance ``__dict__`` reads: no code of the target runs, and nothing is
kept once the census returns.
"""

from __future__ import annotations

import types
from typing import Any, Dict, List, Optional, Set, Tuple

from . import roots
from .containertypes import CONTAINER_TYPES
from .typeinfo import ident, instance_dict, mro, type_name

MIN_LINKS = 3  # a head and two below it: fewer is a wrapper, not a chain
MAX_LINKS = 4096  # links followed at most from one head
MAX_CHAINS = 2  # per census
MAX_HEADS = 8  # instances of the growing types looked at from the roots
MAX_PARENTS = 8  # items of a tuple or list attribute looked at for the next link


def find(names: Set[str], deadline: float) -> List[Dict[str, Any]]:
    """[{"type", "holder", "links", "via"}] for the chains of the types ``names`` whose heads the
    user's roots lead to (two levels down: a local, an attribute of one); with the chains
    of closures and generators (``closures``) when functions, cells or generators are among
    them."""
    found = closures(deadline) if names & {"function", "cell", "generator"} else []
    if "traceback" in names:
        found += tracebacks(deadline)
    return found + _of_types(names, deadline)


_TB = types.TracebackType
_EXC_TB = BaseException.__dict__["__traceback__"]  # C getters: no code of the target runs
_TB_NEXT = _TB.__dict__["tb_next"]


def tracebacks(deadline: float) -> List[Dict[str, Any]]:
    """[{"type": "traceback", "holder": "<exception>.__traceback__", "links", "via":
    "tb_next"}] for an exception the user's roots keep whose traceback is a long chain: one
    exception object raised again and again (``raise _OVERSIZE``) gains the frames of every
    raise, each with its locals (wild_y/leak_gnn_curriculum_sentinel: 1,332 tracebacks)."""

    known: Dict[type, bool] = {}

    def raised(value: Any) -> bool:
        cls = type(value)
        hit = known.get(cls)
        if hit is None:
            hit = known[cls] = BaseException in mro(cls)
        return hit and _EXC_TB.__get__(value) is not None

    try:
        heads = roots.find_matching(raised, deadline, MAX_HEADS)
    except Exception:  # noqa: BLE001 - a census never fails the program for a name
        return []
    out: List[Dict[str, Any]] = []
    for holder, exc in heads:
        tb, links = _EXC_TB.__get__(exc), 0
        while type(tb) is _TB and links < MAX_LINKS:
            links += 1
            tb = _TB_NEXT.__get__(tb)
        if links >= MIN_LINKS * 4:  # a raise through a few calls is a dozen at most
            out.append(
                {
                    "type": "traceback",
                    "holder": f"{holder}.__traceback__",
                    "links": links,
                    "via": "tb_next",
                }
            )
    return sorted(out, key=lambda c: -c["links"])[:MAX_CHAINS]


def closures(deadline: float) -> List[Dict[str, Any]]:
    """[{"type": "function" | "generator", "closure", "via", "holder", "links"}] for the
    chains of code the user's roots lead to, each link made by the same code and keeping the
    one before it: a function made again every round around the last one (``f = wrap(f)``;
    a signal handler that calls the handler it replaced: ``via`` its closure variable), a
    generator that goes on with ``yield from`` itself (``via`` "yield from": each one stays
    suspended with its locals)."""
    try:
        heads = roots.find_matching(lambda v: code_link(v) is not None, deadline, MAX_HEADS)
    except Exception:  # noqa: BLE001 - a census never fails the program for a name
        return []
    out: List[Dict[str, Any]] = []
    linked: Set[int] = set()
    for holder, head in heads:
        if ident(head) in linked:
            continue  # a link of a chain already counted (the handler's ``previous``)
        link = code_link(head)
        if link is None:
            continue
        via, links = link[0], 1
        linked.add(ident(head))
        while link is not None and ident(link[1]) not in linked and links < MAX_LINKS:
            linked.add(ident(link[1]))
            links += 1
            link = code_link(link[1])
        if links >= MIN_LINKS:
            code = _code(head)
            out.append(
                {
                    "type": "generator" if type(head) is types.GeneratorType else "function",
                    "closure": str(getattr(code, "co_qualname", getattr(code, "co_name", "?"))),
                    "via": via,
                    "holder": holder,
                    "links": links,
                }
            )
            if len(out) >= MAX_CHAINS:
                break
    return out


def code_link(obj: Any) -> Optional[Tuple[str, Any]]:
    """One link of a chain of code: (the closure variable's name, its function) of the first
    closure cell of a function that holds a function made by the same code, or ("yield
    from", the generator) a generator delegates to when made by the same code; else None."""
    if type(obj) is types.GeneratorType:
        inner = obj.gi_yieldfrom
        if type(inner) is types.GeneratorType and inner.gi_code is obj.gi_code:
            return "yield from", inner
        return None
    if type(obj) is not types.FunctionType:
        return None
    code = obj.__code__
    for name, cell in zip(code.co_freevars, obj.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if type(value) is types.FunctionType and value.__code__ is code:
            return name, value
    return None


def _code(obj: Any) -> Any:
    return obj.gi_code if type(obj) is types.GeneratorType else obj.__code__


def _of_types(names: Set[str], deadline: float) -> List[Dict[str, Any]]:
    names = {n for n in names if "." in n}  # builtins (dict, list, cell...) never chain
    if not names:
        return []
    known: Dict[type, bool] = {}

    def of_growing_type(value: Any) -> bool:
        cls = type(value)
        hit = known.get(cls)
        if hit is None:  # containers and their subclasses (an OrderedDict) are the tracker's
            hit = known[cls] = type_name(cls) in names and not CONTAINER_TYPES.intersection(
                mro(cls)
            )
        return hit and instance_dict(value) is not None  # its links are attributes

    owners: Dict[str, List[str]] = {}
    try:
        heads = roots.find_matching(of_growing_type, deadline, MAX_HEADS, 2, owners)
    except Exception:  # noqa: BLE001 - a census never fails the program for a name
        return []
    longest: Dict[str, Dict[str, Any]] = {}  # per type, from the head with most links
    for holder, head in heads:
        name = type_name(type(head))
        links, via = length(head)
        if links >= MIN_LINKS and links > longest.get(name, {}).get("links", 0):
            longest[name] = {"type": name, "holder": holder, "links": links, "via": via}
            if owners.get(holder):  # the classes on its path: ``RunningStandardizer.mean``
                longest[name]["owners"] = owners[holder]
    return sorted(longest.values(), key=lambda c: -c["links"])[:MAX_CHAINS]


def length(head: Any) -> Tuple[int, str]:
    """Links from ``head`` down through attributes holding an object of its own type (or a
    tuple or list of parents, the first of its type), and the name of the first such
    attribute (``parent``, ``sources``: what a person calls the link)."""
    cls = type(head)
    seen = {ident(head)}
    obj = head
    via = ""
    while len(seen) < MAX_LINKS:
        d = instance_dict(obj)
        try:
            items = list(d.items()) if d else []
            link = next(((k, v) for k, v in items if type(v) is cls), None)
            if link is None:  # a lineage: ``out.sources = (mean, batch_mean)``
                link = next(
                    (
                        (k, w)
                        for k, v in items
                        if type(v) is tuple or type(v) is list
                        for w in v[:MAX_PARENTS]
                        if type(w) is cls
                    ),
                    None,
                )
        except RuntimeError:  # changed size under us (another thread)
            break
        if link is None or ident(link[1]) in seen:
            break
        if not via and isinstance(link[0], str):
            via = link[0]
        seen.add(ident(link[1]))
        obj = link[1]
    return len(seen), via
