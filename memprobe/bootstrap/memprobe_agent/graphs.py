"""Autograd graph sizes, walked from live tensors' ``grad_fn`` through ``next_functions``.

The graph's saved tensors live in C++ where gc and tracemalloc cannot see them;
the nodes are the handle. Three numbers tell the two graph leaks apart:

- retained graphs (``losses.append(loss)``): ``roots`` and ``nodes`` grow,
  ``largest`` stays flat;
- one growing graph (state carried across steps without ``.detach()``):
  ``largest`` grows with ``nodes``, ``roots`` stays flat.

Nodes shared between graphs (a parameter's ``AccumulateGrad``) are counted
once; ``largest`` is the most nodes first reached from one root, which is the
size of the biggest graph when graphs share only their leaves.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List

MAX_NODES = 200_000


def graph_stats(roots: List[Any], deadline: float, max_nodes: int = MAX_NODES) -> Dict[str, Any]:
    """Unique nodes, roots, the largest graph and its root node (``"root"``, an object the
    caller must drop; ``"largest_root_type"`` is its type name).

    First one walk over every root with a shared visited set (the unique node
    count), noting which roots hang below another root; then the graph of each
    top root on its own, for the largest. Both stop at ``max_nodes`` visits in
    all, or at the deadline.
    """
    root_ids = {id(r) for r in roots}
    seen: set = set()
    below: set = set()  # roots reached from another root: part of a bigger graph
    keep: List[Any] = []  # hold every node while walking so no id is reused
    visits = [0]
    truncated = False
    for root in roots:
        if id(root) not in seen and _walk(
            root, seen, keep, root_ids, below, visits, max_nodes, deadline
        ):
            truncated = True
            break
    largest = 0
    largest_root: Any = None
    for root in roots:
        if truncated or id(root) in below:
            continue
        mine: set = set()
        truncated = _walk(root, mine, keep, root_ids, None, visits, max_nodes * 2, deadline)
        if len(mine) > largest:
            largest, largest_root = len(mine), root
    n_roots = len(roots)
    return {
        "nodes": len(seen),
        "roots": n_roots,
        "largest": largest,
        "mean_per_root": round(len(seen) / n_roots, 1) if n_roots else 0,
        "truncated": truncated,
        "root": largest_root,
        "largest_root_type": type(largest_root).__name__ if largest_root is not None else None,
    }


def _walk(
    root: Any,
    seen: set,
    keep: List[Any],
    root_ids: set,
    below: Any,
    visits: List[int],
    max_nodes: int,
    deadline: float,
) -> bool:
    """Depth-first from one node; True when cut off by the node budget or the deadline."""
    stack = [root]
    while stack:
        node = stack.pop()
        key = id(node)
        if key in seen:
            continue
        seen.add(key)
        keep.append(node)
        visits[0] += 1
        if visits[0] >= max_nodes or (visits[0] & 1023 == 0 and time.perf_counter() > deadline):
            return True
        try:
            nexts = node.next_functions
        except Exception:  # noqa: BLE001 - a node type without edges
            continue
        for pair in nexts:
            child = pair[0]
            if child is None:
                continue
            if below is not None and id(child) in root_ids:
                below.add(id(child))
            if id(child) not in seen:
                stack.append(child)
    return False


def reach(root: Any, max_nodes: int, deadline: float) -> int:
    """How many nodes one root's graph has (at most ``max_nodes``)."""
    seen: set = set()
    _walk(root, seen, [], set(), None, [0], max_nodes, deadline)
    return len(seen)
