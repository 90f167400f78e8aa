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

**Looking at a node is not free of side effects.** Reading ``t.grad_fn`` or
``node.next_functions`` makes a Python wrapper for each C++ node it returns, and
in torch 2.13 that wrapper then lives as long as the node (the node owns it once
Python lets go; ``probe: tests/scripts/graph_wrappers.py``). A node that owns its
wrapper is destroyed through the wrapper's dealloc, outside torch's iterative
``deleteNode`` (pytorch/pytorch#5534, #6873), so freeing a chain costs one level of
native stack per wrapped node on it: a walk over a 9,000-step RNN chain (≈ 90,000
nodes) made the target's own teardown overflow its 8 MiB stack (SIGSEGV), and
10,000 wrapped nodes overflow a 1 MiB stack whether adjacent or one in a hundred.
So every wrapper the agent may create is paid from a ``WrapBudget``: the live
wrappers seen in the census (the target's and earlier censuses') plus the new ones
stay under ``MAX_LIVE_WRAPPERS``, a bounded ≈ 0.2–0.4 MiB of teardown stack. Whether
a tensor holds a graph is read without any wrapper (``requires_grad`` and not
``is_leaf``, C getters); sizes are published only when a walk was not cut short.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

from .typeinfo import ident

MAX_NODES = 200_000
# Live autograd-node wrappers (anyone's) above which the agent creates no more. Measured
# teardown cost: 100-200 bytes of native stack per wrapped node on a chain. Graph walks
# stop at half of it: the rest is kept for reading each census' graph roots, one wrapper
# per root, which tells a graph carried across steps (see carried.py).
MAX_LIVE_WRAPPERS = 2_000
WALK_SHARE = 0.5

_node_types: Tuple[Optional[object], FrozenSet[type]] = (None, frozenset())
_node_names: Tuple[FrozenSet[type], FrozenSet[str]] = (frozenset(), frozenset())


def node_types() -> FrozenSet[type]:
    """The C++ autograd node wrapper types (``MulBackward0``, ``AccumulateGrad``...).

    torch's own test for them (``torch.autograd.graph.Node.__subclasshook__``) is
    "an attribute of ``torch._C._functions`` by its name"; read here from the module's
    namespace directly, so no ABC or other target code runs.
    """
    global _node_types
    torch = sys.modules.get("torch")
    c = torch.__dict__.get("_C") if torch is not None else None
    mod = getattr(c, "__dict__", {}).get("_functions") if c is not None else None
    if mod is None:
        return frozenset()
    if _node_types[0] is not mod:
        try:
            found = frozenset(v for v in vars(mod).values() if type(v) is type)
        except TypeError:
            found = frozenset()
        _node_types = (mod, found)
    return _node_types[1]


def node_type_names() -> FrozenSet[str]:
    """The names the census gives those types (builtins: their bare names)."""
    global _node_names
    types = node_types()
    if _node_names[0] is not types:
        _node_names = (types, frozenset(t.__name__ for t in types))
    return _node_names[1]


class WrapBudget:
    """How many autograd-node wrappers one census may still bring into being.

    ``known`` holds the ids of the wrappers alive when the census started (seen in
    its object pass); a node obtained later that is not among them is new and costs
    one. ``admit`` says False once the budget is spent: the caller stops walking.
    """

    def __init__(self, live: Iterable[int], cap: Optional[int] = None) -> None:
        self.initial: FrozenSet[int] = frozenset(live)  # alive before this census read any
        self.known: Set[int] = set(self.initial)
        self.cap = MAX_LIVE_WRAPPERS if cap is None else cap
        self.walk_cap = int(self.cap * WALK_SHARE)
        self.created = 0
        self.spent = len(self.known) >= self.cap
        self.walk_spent = len(self.known) >= self.walk_cap

    @property
    def left(self) -> int:
        return self.cap - len(self.known)

    def admit(self, node: Any, walk: bool = False) -> bool:
        """True when ``node`` (just obtained) may be kept and walked on; a walk may use
        only ``walk_cap`` of the budget."""
        key = ident(node)
        if key not in self.known:
            self.known.add(key)
            self.created += 1
            if len(self.known) > self.cap:
                self.spent = True
            if len(self.known) > self.walk_cap:
                self.walk_spent = True
        return not (self.walk_spent if walk else self.spent)


def graph_stats(
    roots: List[Any], budget: WrapBudget, deadline: float, max_nodes: int = MAX_NODES
) -> Dict[str, Any]:
    """Unique nodes, roots, the largest graph and its root node (``"root"``, an object the
    caller must drop; ``"largest_root_type"`` is its type name).

    First one walk over every root with a shared visited set (the unique node
    count), noting which roots hang below another root; then the graph of each
    top root on its own, for the largest. Both stop at ``max_nodes`` visits in
    all, at the deadline, or when the wrapper budget is spent (``"cut"`` says which).
    """
    root_ids = {ident(r) for r in roots}
    seen: Set[int] = set()
    below: Set[int] = set()  # roots reached from another root: part of a bigger graph
    keep: List[Any] = []  # hold every node while walking so no id is reused
    visits = [0]
    cut: Optional[str] = None
    for root in roots:
        if ident(root) not in seen:
            cut = _walk(root, seen, keep, root_ids, below, visits, max_nodes, deadline, budget)
            if cut:
                break
    largest = 0
    largest_root: Any = None
    for root in roots:
        if cut or ident(root) in below:
            continue
        mine: Set[int] = set()
        cut = _walk(root, mine, keep, root_ids, None, visits, max_nodes * 2, deadline, budget)
        if len(mine) > largest:
            largest, largest_root = len(mine), root
    n_roots = len(roots)
    # what the roots are (a loss, a layer's output), known even when the walk was cut: read
    # from the wrappers the caller already holds, none made
    kinds: Dict[str, int] = {}
    for root in roots:
        name = type(root).__name__
        kinds[name] = kinds.get(name, 0) + 1
    return {
        "nodes": len(seen),
        "roots": n_roots,
        "largest": largest,
        "mean_per_root": round(len(seen) / n_roots, 1) if n_roots else 0,
        "truncated": cut is not None,
        "cut": cut,
        "wrappers_made": budget.created,
        "root": largest_root,
        "largest_root_type": type(largest_root).__name__ if largest_root is not None else None,
        "root_types": dict(sorted(kinds.items(), key=lambda kv: -kv[1])[:3]),
    }


def _walk(
    root: Any,
    seen: Set[int],
    keep: List[Any],
    root_ids: Set[int],
    below: Optional[Set[int]],
    visits: List[int],
    max_nodes: int,
    deadline: float,
    budget: WrapBudget,
) -> Optional[str]:
    """Depth-first from one node; the reason when cut off (node budget, deadline,
    wrapper budget), else None."""
    stack = [root]
    while stack:
        node = stack.pop()
        key = ident(node)
        if key in seen:
            continue
        seen.add(key)
        keep.append(node)
        visits[0] += 1
        if visits[0] >= max_nodes:
            return "nodes"
        if visits[0] & 1023 == 0 and time.perf_counter() > deadline:
            return "deadline"
        try:
            nexts = node.next_functions
        except Exception:  # noqa: BLE001 - a node type without edges
            continue
        for pair in nexts:
            child = pair[0]
            if child is None:
                continue
            if not budget.admit(child, walk=True):
                return "wrappers"
            if below is not None and ident(child) in root_ids:
                below.add(ident(child))
            if ident(child) not in seen:
                stack.append(child)
    return None


def reach(root: Any, max_nodes: int, deadline: float, budget: WrapBudget) -> Optional[int]:
    """How many nodes one root's graph has (at most ``max_nodes``); None when the wrapper
    budget or the deadline cut the walk short (a partial count would mislead)."""
    seen: Set[int] = set()
    keep: List[Any] = []
    cut = _walk(root, seen, keep, set(), None, [0], max_nodes, deadline, budget)
    return None if cut in ("wrappers", "deadline") else len(seen)


def holds_graph(t: Any) -> bool:
    """True when a tensor has a ``grad_fn``, read without making a wrapper for it."""
    return bool(t.requires_grad) and not t.is_leaf


def grads_readable() -> bool:
    """Whether ``.grad`` may be read here: only in the main thread, at a step boundary or in
    its own call. A census from the agent's thread runs beside the program, and autograd's
    engine lets go of the GIL while it runs a backward: it replaces a leaf's ``.grad``
    (AccumulateGrad) while the getter reads it, and the two threads' reference counts on
    the old gradient went wrong ("double free or corruption", the program aborted, in a loop
    of ``backward(create_graph=True)`` without steps: tests/scripts/graph_shapes.py)."""
    return threading.current_thread() is threading.main_thread()


def grad_holds_graph(t: Any) -> bool:
    """A leaf that requires grad whose ``.grad`` has a ``grad_fn`` (left by
    ``backward(create_graph=True)``): that graph refers back to the leaf, a reference cycle
    through autograd that Python's collector cannot see. ``.grad`` is read of leaves only
    (of any other tensor it warns)."""
    if not (t.requires_grad and t.is_leaf):
        return False
    g = t.grad
    return g is not None and holds_graph(g)
