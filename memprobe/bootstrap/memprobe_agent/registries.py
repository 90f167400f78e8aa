"""Registries the standard library keeps on a class, named by the path a person looks up
(roots.py asks here before it walks from the user's roots)."""

from __future__ import annotations

from typing import Any, Dict, List, Set, Tuple

from .holders import Step, result
from .typeinfo import ident, instance_dict, loaded_class, type_dict

# registries the standard library keeps on a class, which a user's call joins and only
# the registered object's death (or nothing) leaves: (module, class, class attribute, then
# instance attributes). Named so before any path from the user's roots: a logger a session
# keeps leads to its manager's dict too, but ``logging.Logger.manager.loggerDict`` is the
# name a person knows and looks up
KNOWN_REGISTRIES: Tuple[Tuple[str, str, str, Tuple[str, ...]], ...] = (
    ("weakref", "finalize", "_registry", ()),
    ("logging", "Logger", "manager", ("loggerDict",)),
)


def known_registries(targets: Set[int]) -> Dict[int, Dict[str, Any]]:
    """The targets that are one of ``KNOWN_REGISTRIES`` (a table, not a pass over all
    library classes' attributes: that took 0.1 s a census on a framework's heap)."""
    found: Dict[int, Dict[str, Any]] = {}
    for name, cls_name, attr, more in KNOWN_REGISTRIES:
        cls = loaded_class(name, cls_name)
        v = type_dict(cls).get(attr) if cls is not None else None
        steps: List[Step] = [("key", cls_name), ("classattr", attr)]
        for sub in more:
            d = instance_dict(v) if v is not None else None
            v = d.get(sub) if d is not None else None
            steps.append(("attr", sub))
        if v is not None and ident(v) in targets:
            found[ident(v)] = result(name, ("module", name), steps, True)
            found[ident(v)]["registry"] = True  # joined by the user's calls (containers._rank)
    return found
