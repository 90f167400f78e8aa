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
    caller must drop; ``"largest_root_type"`` is its type name)."""
    seen: set = set()
    keep: List[Any] = []  # hold every node while walking so no id is reused
    largest = 0
    largest_root: Any = None
    truncated = False
    visited = 0
    for root in roots:
        if truncated:
            break
        if id(root) in seen:
            continue
        stack = [root]
        new = 0
        while stack:
            node = stack.pop()
            key = id(node)
            if key in seen:
                continue
            seen.add(key)
            keep.append(node)
            new += 1
            visited += 1
            if visited >= max_nodes or (visited & 1023 == 0 and time.perf_counter() > deadline):
                truncated = True
                break
            try:
                nexts = node.next_functions
            except Exception:  # noqa: BLE001 - a node type without edges
                continue
            for pair in nexts:
                child = pair[0]
                if child is not None and id(child) not in seen:
                    stack.append(child)
        if new > largest:
            largest, largest_root = new, root
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
