"""Containers that grow together where none does alone: siblings filled one after another
(``samples[shard]`` lists), and the nodes of a tree of dicts (a trie) at several depths.
Each is named by the path its parts share."""

from __future__ import annotations

from typing import Dict, List, Optional

from memprobe.analysis.census import MIN_ITEMS, Container, Profile


def filled_in_turn(prof: Profile) -> Optional[Container]:
    """The parent of sibling containers filled one after another (``samples[shard]``
    lists of a ``defaultdict(list)``, each full once the next one starts): none keeps
    growing, together they do. Named by the path they share, with their items summed."""
    groups: Dict[str, List[Container]] = {}
    for c in prof.containers:
        if c.scalar or not c.holder.endswith("]") or "[" not in c.holder:
            continue
        parent = c.holder[: c.holder.rindex("[")]
        if parent and not parent.endswith(("?", "]")):
            groups.setdefault(parent, []).append(c)
    best: Optional[Container] = None
    for parent, boxes in groups.items():
        if len(boxes) < 2 or sum(max(b.growth, 0) for b in boxes) < MIN_ITEMS:
            continue
        top = max(boxes, key=lambda b: b.len)
        total = sum(b.len for b in boxes)
        span = (prof.xs[-1] - prof.xs[0]) if prof.xs else 0.0
        merged = Container(
            holder=parent,
            type=f"container of {len(boxes)} {top.type}s",
            len=total,
            per_step=total / span if span > 0 else 0.0,
            growth=total,
            elem_types=list(top.elem_types),
            chain=list(top.chain[:-1]),
            complete=all(b.complete for b in boxes),
            bytes=sum(b.bytes or 0.0 for b in boxes) or None,
        )
        if best is None or merged.len > best.len:
            best = merged
    return best


def tree_of_dicts(prof: Profile) -> Optional[Container]:
    """The top of a tree of nested dicts that keeps branching (a trie: ``index._root['c']
    ['o']…``): the growing containers hang at different depths below one holder, and
    each fills only a little (a node's children are few). Named by the holder the
    tree hangs from; its rate is the heap's gain of the nodes' type."""
    groups: Dict[str, List[Container]] = {}
    for c in prof.containers:
        top, depth = c.holder, 0
        while top.endswith("]") and "[" in top:
            top, depth = top[: top.rindex("[")], depth + 1
        if depth >= 2 and not c.scalar and top and not top.endswith("?"):
            groups.setdefault(top, []).append(c)
    best: Optional[Container] = None
    for top, boxes in groups.items():
        levels = {b.holder.count("[") for b in boxes}
        rate = prof.type_rate(boxes[0].type)
        if len(boxes) < 2 or len(levels) < 2 or rate <= 0:
            continue
        if any(b.type != boxes[0].type for b in boxes):
            continue
        cut = boxes[0].holder.count("[") - top.count("[")
        merged = Container(
            holder=top,
            type=f"tree of nested {boxes[0].type}s",
            len=sum(b.len for b in boxes),
            per_step=rate,
            growth=sum(max(b.growth, 0) for b in boxes),
            elem_types=[boxes[0].type],
            chain=list(boxes[0].chain[:-cut]) if cut > 0 else list(boxes[0].chain),
            complete=all(b.complete for b in boxes),
            bytes=None,
        )
        if best is None or merged.per_step > best.per_step:
            best = merged
    return best
