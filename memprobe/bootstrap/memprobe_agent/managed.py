"""Objects shared through a ``multiprocessing`` manager: kept in its server process, named in
the process that holds the proxy.

``archive = multiprocessing.Manager().list()`` then ``archive.append(episode)`` every
update: the list lives in the manager's server process (a child), the trainer holds only
a proxy and its own memory stays flat. The census is off in that child (forked from the
trainer, a census would copy every page it shares), but the server keeps its objects in
one dict, ``Server.id_to_obj`` (``{ident: (obj, exposed, gettypeid)}``), and publishes
itself as ``current_process()._manager_server`` while it serves: taking ``len()`` of the
containers in that dict touches a few object headers. Each one that grew is reported as
``container:manager[<ident>]:len``.

In the process that holds the proxy, a census looks among the user's roots for proxies
(``proxies``): each has its object's ident (``_id``), and the record's assembly names the
server's series by the proxy's holder (``collect/managed.py``).
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List

from . import roots, wire
from .typeinfo import instance_dict, mro, type_dict, type_name
from .workerdata import GrownLengths

MAX_OBJECTS = 256  # shared objects looked at per sample
MAX_PROXIES = 16  # proxies named per census


def holder(ident: str) -> str:
    """The holder a server's series carries until the proxy's holder names it."""
    return f"{wire.MANAGED_PREFIX}{ident}]"


class ManagerWatch:
    """The lengths of the server's containers, once each has grown."""

    def __init__(self) -> None:
        self.lengths = GrownLengths()

    def poll(self) -> Dict[str, float]:
        out: Dict[str, float] = {}
        for ident, obj in _shared(server())[:MAX_OBJECTS]:
            self.lengths.add(out, holder(ident), obj)
        return out


def server() -> Any:
    """The manager server this process runs, or None (read from the stdlib's own dicts)."""
    mod = sys.modules.get("multiprocessing.process")
    proc = mod.__dict__.get("_current_process") if mod is not None else None
    fields = instance_dict(proc) if proc is not None else None
    return fields.get("_manager_server") if fields is not None else None


def _shared(srv: Any) -> List[Any]:
    fields = instance_dict(srv) if srv is not None else None
    table = fields.get("id_to_obj") if fields is not None else None
    if type(table) is not dict:
        return []
    try:
        items = list(table.items())
    except RuntimeError:  # changed size under us (the server's threads)
        return []
    return [
        (ident, entry[0])
        for ident, entry in items
        if isinstance(ident, str) and type(entry) is tuple and entry
    ]


def shared_names(deadline: float) -> Dict[str, List[Dict[str, Any]]]:
    """A census' ``proxies``: [{"id", "holder", "type"}] for the manager proxies the user's
    roots lead to; {} when there are none."""
    mod = sys.modules.get("multiprocessing.managers")
    base = mod.__dict__.get("BaseProxy") if mod is not None else None
    # every proxy made in this process registers its manager's address there first: none
    # yet (torch imports the module; few programs use a manager), no walk
    if base is None or not type_dict(base).get("_address_to_local"):
        return {}

    def is_proxy(value: Any) -> bool:
        return base in mro(type(value))

    try:
        found = roots.find_matching(is_proxy, deadline, MAX_PROXIES)
    except Exception:  # noqa: BLE001 - a census never fails the program for a name
        return {}
    out: List[Dict[str, Any]] = []
    for name, proxy in found:
        fields = instance_dict(proxy)
        ident = fields.get("_id") if fields is not None else None
        if isinstance(ident, str):
            out.append({"id": ident, "holder": name, "type": type_name(type(proxy))})
    return {"proxies": out} if out else {}
