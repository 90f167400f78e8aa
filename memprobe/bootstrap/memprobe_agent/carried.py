"""Which autograd graph is carried across steps, and which named tensor holds it.

A step's own graph dies with its step; state carried across steps without ``.detach()``
(``hidden`` of an RNN, ``total_loss += loss``) keeps every step's graph below its own. The
census reads, behind each tensor the user's roots name, the root node of its graph (one
wrapper each, paid from the census' ``WrapBudget``, see graphs.py), and the next census
looks whether the root it saw last time is still alive: that holds for chains of any length,
with no walk.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Set

from . import containers, graphs, roots, sizes
from .typeinfo import ident

BELOW_DEPTH = 4  # levels looked down from a carried root for another carried root
BELOW_NODES = 64
# how deep below the user's roots the tensors holding graphs are looked for: locals,
# globals and two levels of attributes or items (``self.memory.feats``, a bank kept on
# the trainer's memory)
NAMED_DEPTH = 3


class TensorNamer:
    """Names the tensors that hold graphs for one census (the walk from the roots), and
    keeps the classes on each holder's path (``RolloutBuffer.logp`` for ``main:buf.logp``)
    for the graph holders the census reports (``graphs.holder_types``)."""

    def __init__(self) -> None:
        self.owners: Dict[str, List[str]] = {}

    def name(self, ids: Set[int], deadline: float) -> Dict[int, str]:
        out: Dict[int, str] = {}
        for k, r in roots.search(ids, deadline).items():
            out[k] = r["holder"]
            if r.get("owners"):
                self.owners[r["holder"]] = list(r["owners"])
        return out

    def classes_of_holders(self, payload: Dict[str, Any]) -> None:
        g = payload.get("graphs")
        if not isinstance(g, dict) or not self.owners:
            return
        named = {g.get("largest_holder")} | {c["holder"] for c in g.get("carried") or []}
        types = {h: self.owners[h] for h in named if isinstance(h, str) and h in self.owners}
        if types:
            g["holder_types"] = types


class GraphHolders:
    """What one process' censuses saw of the graphs behind named tensors. ``min_growth``:
    nodes the largest graph must have gained since the last census before the named
    tensors' graphs are sized."""

    def __init__(self, min_growth: int) -> None:
        self.min_growth = min_growth
        # graph roots seen behind named tensors at the last census: holder -> (id of the
        # root's wrapper, its sequence number, its type name); ints and strings only
        self.roots_seen: Dict[str, Any] = {}
        self.kept: Dict[str, int] = {}  # holder -> censuses in a row its old root outlived

    def name(
        self,
        res: Dict[str, Any],
        v: Dict[str, float],
        prev_v: Dict[str, float],
        payload: Dict[str, Any],
        deadline: float,
    ) -> None:
        """Name the tensors that hold graphs; say which graph is carried across steps.

        Carried: the root node an earlier census saw behind a named tensor is still alive
        at this one, so the old graph hangs below the new (``hidden`` never detached,
        ``total += loss``); a step's own graph dies with its step. That costs one node
        wrapper per named root per census, and no walk: it holds for chains of any length.

        Sizes, when the largest graph grew and the walk was not cut short: of the named
        tensors whose graph is at least half the largest, the one with the smallest graph
        is the state carried across steps (the step's loss and outputs hang above it).
        """
        pairs = res.pop("graph_roots", None) or []
        budget: graphs.WrapBudget = res.pop("wrap_budget")
        wrappers: Dict[int, Any] = res.pop("wrappers", None) or {}
        if "graphs" not in payload:
            return
        g = payload["graphs"]
        now_named = named_graph_roots(budget, deadline)
        carried = self._carried(now_named, wrappers)
        del wrappers
        if carried:
            _mark_below(carried, {h: fn for fn, h in now_named}, budget, deadline)
            g["carried"] = carried
        del now_named
        named = [(fn, holder) for fn, _, holder in pairs if holder is not None][:20]
        del pairs
        now_largest = v.get("graph:largest", 0)
        grew = now_largest - prev_v.get("graph:largest", now_largest)
        if grew < self.min_growth:
            return
        measured = []
        for fn, holder in named:
            n = graphs.reach(fn, int(now_largest) * 2 + 10, deadline, budget)
            if n is not None:
                measured.append((n, holder, type(fn).__name__))
        del named
        big = sorted(x for x in measured if x[0] >= now_largest / 2)
        if big:
            g["largest_holder"] = big[0][1]
            g["largest_holder_node"] = big[0][2]
            g["holders"] = [{"holder": h, "nodes": n} for n, h, _ in big[:4]]

    def _carried(self, named: List[Any], wrappers: Dict[int, Any]) -> List[Dict[str, Any]]:
        carried: List[Dict[str, Any]] = []
        seen: Dict[str, Any] = {}
        for fn, holder in named:
            seen[holder] = (ident(fn), _sequence_nr(fn), type(fn).__name__)
            prev = self.roots_seen.get(holder)
            if prev is None or prev[0] == ident(fn):
                continue  # first sight, or no step since
            old = wrappers.get(prev[0])
            alive = (
                old is not None
                and type(old).__name__ == prev[2]
                and _sequence_nr(old) == prev[1]
                and prev[1] is not None
            )
            kept = self.kept.get(holder, 0) + 1 if alive else 0
            self.kept[holder] = kept
            if kept:
                # seq: when its current root was made; the state a step reads is older than
                # what the step makes from it (``keys`` a bank keeps the old graphs of)
                entry = {"holder": holder, "kept": kept, "node": type(fn).__name__}
                carried.append({**entry, "seq": seen[holder][1]})
        self.roots_seen = seen
        if len(self.kept) > 64:
            self.kept = {h: k for h, k in self.kept.items() if h in seen}
        return carried


def named_graph_roots(budget: graphs.WrapBudget, deadline: float) -> List[Any]:
    """(root wrapper, holder) of the tensors holding a graph that the user's roots name
    now (a wrapper each, from the budget)."""
    tensor_types = containers.tensor_types()
    if not tensor_types:
        return []

    def holds(value: Any) -> bool:
        return type(value) in tensor_types and graphs.holds_graph(value)

    out: List[Any] = []
    with sizes.torch_function_off():
        for holder, t in roots.find_matching(holds, deadline, depth=NAMED_DEPTH):
            fn = t.grad_fn
            if fn is not None and budget.admit(fn):
                out.append((fn, holder))
    return out


def _sequence_nr(node: Any) -> Optional[int]:
    """The node's creation number (a C method of every autograd node)."""
    try:
        n = node._sequence_nr()
    except Exception:  # noqa: BLE001
        return None
    return n if isinstance(n, int) else None


def _mark_below(
    carried: List[Dict[str, Any]], roots_by_holder: Dict[str, Any], budget: Any, deadline: float
) -> None:
    """A carried holder whose current root hangs just below another carried holder's root
    (``loss`` under ``total_loss += loss``) is marked ``below`` it: its old graphs are kept
    by the other one. A few levels only, wrappers paid from the budget."""
    if len(carried) < 2:
        return
    ids = {ident(roots_by_holder[c["holder"]]): c["holder"] for c in carried}
    for c in carried:
        top = roots_by_holder[c["holder"]]
        level, seen, found = [top], {ident(top)}, None
        for _ in range(BELOW_DEPTH):
            nxt = []
            for node in level:
                try:
                    pairs = node.next_functions
                except Exception:  # noqa: BLE001
                    continue
                for pair in pairs:
                    child = pair[0]
                    if child is None or ident(child) in seen or not budget.admit(child):
                        continue
                    seen.add(ident(child))
                    other = ids.get(ident(child))
                    if other is not None and other != c["holder"]:
                        found = other
                    nxt.append(child)
            if len(seen) > BELOW_NODES or time.perf_counter() > deadline:
                break
            level = nxt
        del level, nxt
        if found is not None:
            below = next(x for x in carried if x["holder"] == found)
            below["below"] = c["holder"]
