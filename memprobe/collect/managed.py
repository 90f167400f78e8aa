"""A manager's shared objects named by the proxies that reach them.

In a ``multiprocessing`` manager's server process the agent reports each shared container
that grows as ``container:manager[<ident>]:len`` (it cannot see who uses it); the censuses
of the processes that hold proxies report ``proxies``: each proxy's ident and holder
(``__main__.archive``). The record names the server's series by that holder, so the finding
in the manager's process says what the program calls it."""

from __future__ import annotations

import dataclasses
from typing import Dict, List

from memprobe.bootstrap.memprobe_agent import wire
from memprobe.record import Process

_HEAD = f"container:{wire.MANAGED_PREFIX}"


def name_shared(processes: List[Process]) -> List[Process]:
    """``processes`` with each manager series renamed by a proxy's holder, where one is
    known (the first census to report the ident names it)."""
    names: Dict[str, str] = {}
    for proc in processes:
        for entry in proc.census:
            found = entry.get("proxies")
            for p in found if isinstance(found, list) else []:
                ok = isinstance(p, dict) and isinstance(p.get("holder"), str)
                if ok and isinstance(p.get("id"), str):
                    names.setdefault(p["id"], p["holder"])
    if not names:
        return processes
    return [
        dataclasses.replace(proc, series={_named(k, names): s for k, s in proc.series.items()})
        if any(k.startswith(_HEAD) for k in proc.series)
        else proc
        for proc in processes
    ]


def _named(signal: str, names: Dict[str, str]) -> str:
    if not signal.startswith(_HEAD) or not signal.endswith("]:len"):
        return signal
    holder = names.get(signal[len(_HEAD) : -len("]:len")])
    return f"container:{holder}:len" if holder is not None else signal
