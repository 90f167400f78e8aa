"""A process' census payloads as growth figures: what grows per step, in which container.

Pure and defensive: the census list comes from a run record (JSON written by
the agent, possibly truncated or from an older memprobe), so every field is
read with a type check and a default. Rates are per step when the censuses
have steps, else per second. A census list becomes a :class:`Profile` in
``census_build.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from memprobe.bootstrap.memprobe_agent import wire

# scalar name -> (payload section, field[, sub-field])
_PATHS: Dict[str, Tuple[str, ...]] = {
    "graph:nodes": ("graphs", "nodes"),
    "graph:roots": ("graphs", "roots"),
    "graph:largest": ("graphs", "largest"),
    "tensors:count": ("tensors", "count"),
    "tensors:grad_fn_count": ("tensors", "grad_fn_count"),
    "tensors:grad_graphs": ("tensors", "grad_graphs"),
    "tensors:cpu_bytes": ("tensors", "bytes_by_device", "cpu"),
    "modules:count": ("modules", "count"),
    "modules:param_bytes": ("tensors", "param_bytes"),
    "ndarray:count": ("ndarray", "count"),
    "ndarray:bytes": ("ndarray", "bytes"),
    "figures:count": ("figures", "count"),
    "gc:frozen": ("gc", "frozen"),
    "atexit:callbacks": ("gc", "atexit"),
}
MIN_ITEMS = 8  # a container must gain at least this many items to be blamed


def num(v: Any) -> Optional[float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
        return None
    return float(v)


def as_list(v: Any) -> List[Any]:
    return v if isinstance(v, list) else []


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


@dataclass(frozen=True)
class Container:
    holder: str
    type: str
    len: int
    per_step: float
    growth: int
    elem_types: List[str] = field(default_factory=list)  # its last items' (a dict's values)
    key_types: List[str] = field(default_factory=list)  # a dict's last keys'
    chain: List[str] = field(default_factory=list)
    complete: bool = True
    scalar: bool = False
    bytes: Optional[float] = None  # what its items held at the last census (agent's sizes)
    # ``Class.attribute`` of each attribute on its holder's path (``TrainingDashboard.ax_attn``,
    # ``Axes._children``): what the code calls it where a variable's name says little
    owners: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class Profile:
    """Growth of everything the censuses of one process counted."""

    entries: List[Dict[str, Any]]
    xs: List[float]
    containers: List[Container]
    windows: List[Dict[str, Any]]
    per: str = "step"  # what rates are per: "step", or "second" when censuses have no steps
    # holders whose length series grows (from the verdicts); None: not known, all count
    active: Optional[FrozenSet[str]] = None
    # types whose dense live-count series has stopped rising (from the verdicts)
    settled: FrozenSet[str] = frozenset()

    @property
    def n(self) -> int:
        return len(self.entries)

    def value(self, name: str, index: int = -1) -> Optional[float]:
        if not self.entries:
            return None
        path = _PATHS[name]
        entry = self.entries[index]
        if path[0] == "graphs" and _get(entry, "graphs", "cut"):
            return None  # a walk cut short counted part of the graphs: not a size
        return num(_get(entry, *path))

    def _peak(self, name: str) -> Tuple[float, float]:
        """(growth, span) from the first census to the one where the value peaked: the census
        at exit may come after the target dropped everything (its ``main()`` returned)."""
        first = self.value(name, 0)
        if first is None:
            return 0.0, 0.0
        best = (0.0, 0.0)
        for i in range(1, self.n):
            value = self.value(name, i)
            if value is not None and value - first > best[0]:
                best = (value - first, self.xs[i] - self.xs[0])
        return best

    def at_peak(self, name: str, section: str, key: str) -> Any:
        """A payload field of the census where ``name`` was highest (the leak at its fullest)."""
        values = [(self.value(name, i) or 0.0, i) for i in range(self.n)]
        if section == "graphs" and key != "root_types":  # only walks that ran to their end
            # say how big graphs are (what the roots are is known either way)
            values = [(v, i) for v, i in values if not _get(self.entries[i], "graphs", "cut")]
        if not values:
            return None
        return _get(self.entries[max(values)[1]], section, key)

    def growth(self, name: str) -> float:
        return self._peak(name)[0]

    def sustained(self, name: str, rises: int = 1) -> bool:
        """Grew census after census (at least three of them), not one jump that may be a
        wobble; a last census that fell below half of the one before is taken as the target
        tearing down at exit and left out. ``rises``: how many of the steps between
        censuses must go up (a graph that appears with the first forward pass and stays
        the same size rises once)."""
        values = [v for v in (self.value(name, i) for i in range(self.n)) if v is not None]
        if len(values) >= 3 and values[-1] < 0.5 * values[-2]:
            values = values[:-1]
        return (
            len(values) >= 3
            and all(b >= a for a, b in zip(values, values[1:]))
            and values[-1] > values[0]
            and sum(b > a for a, b in zip(values, values[1:])) >= rises
        )

    def rate(self, name: str) -> float:
        """Growth per step (per second without steps), first census to the peak."""
        growth, span = self._peak(name)
        return growth / span if span > 0 else 0.0

    def count_grown(self, name: str, least: float) -> Optional[Tuple[float, float]]:
        """(rate, last value) of a count that grew by ``least`` or more, else None."""
        rate = self.rate(name)
        if rate <= 0 or self.growth(name) < least:
            return None
        return rate, self.value(name) or 0.0

    def carried(self) -> List[Dict[str, Any]]:
        """Named tensors whose graph from an earlier census was still alive at a later one
        (the agent's ``graphs.carried``), best first: the ones no other carried holder
        keeps (``below``), kept longest, a running sum (``state["running_loss"] += loss``
        keeps every step's graph, so each step's own tensors look carried too) before
        other state, a step's own values last, and the state whose current root is older
        before the values a step makes from it."""
        best: Dict[str, Dict[str, Any]] = {}
        below = set()
        for entry in self.entries:
            for c in as_list(_get(entry, "graphs", "carried")):
                if not isinstance(c, dict) or not isinstance(c.get("holder"), str):
                    continue
                holder = c["holder"]
                if isinstance(c.get("below"), str):
                    below.add(holder)
                kept = num(c.get("kept")) or 0.0
                if kept >= best.get(holder, {}).get("kept", 0.0):
                    node = c.get("node") if isinstance(c.get("node"), str) else None
                    seq = num(c.get("seq"))
                    best[holder] = {"holder": holder, "kept": kept, "node": node, "seq": seq}
        out = [b for h, b in best.items() if h not in below]
        return sorted(
            out,
            key=lambda b: (
                -b["kept"],
                b["node"] not in SUM_NODES,
                _step_value(b["node"]) or _step_name(b["holder"]),
                # the older current root: the state a step reads before it makes its own
                # values (a bank written after the step keeps every step's ``keys``)
                b["seq"] is None,
                b["seq"] or 0.0,
                len(b["holder"]),
            ),
        )

    def holder_types(self, holder: str) -> List[str]:
        """The classes whose attributes a graph holder's path reads (``RolloutBuffer.logp``
        for ``main:buf.logp``), as the latest census that named it gave them."""
        for entry in reversed(self.entries):
            types = _get(entry, "graphs", "holder_types")
            found = types.get(holder) if isinstance(types, dict) else None
            if isinstance(found, list):
                return [str(t) for t in found]
        return []

    def grown_graph_holder(self) -> Tuple[Optional[str], Optional[str]]:
        """(holder, root node type) of the latest census where the agent named the tensor
        whose graph grew, counted only when an earlier census had seen a graph already: a
        graph that got bigger, not the first forward pass' graph appearing (an evaluation
        loop's first batch, before its kept outputs pile up)."""
        seen_graph = False
        found: Tuple[Optional[str], Optional[str]] = (None, None)
        named_at = peak = 0.0
        for entry in self.entries:
            largest = num(_get(entry, "graphs", "largest")) or 0.0
            holder = _get(entry, "graphs", "largest_holder")
            # bigger than at the census before is not enough: bigger than ever before (a
            # game's graph, one iteration bigger than the last, is no bigger than earlier ones)
            if isinstance(holder, str) and seen_graph and largest > peak:
                node = _get(entry, "graphs", "largest_holder_node")
                found, named_at = (holder, node if isinstance(node, str) else None), largest
            elif found[0] is not None and 0 < largest < named_at / 2:
                # a later census measured no graph half as big: the one that grew was let go
                # (a self-play game's graph, bigger one iteration than the last); a census
                # whose graph walk measured none (0) says nothing
                found = (None, None)
            if largest > 0:
                seen_graph = True
            peak = max(peak, largest)
        return found

    def last(self, section: str, key: str) -> Any:
        for entry in reversed(self.entries):
            value = _get(entry, section, key)
            if value is not None:
                return value
        return None

    def type_rate(self, name: str) -> float:
        pts = [(x, num(_get(e, "types", name, "count"))) for x, e in zip(self.xs, self.entries)]
        have = [(x, c) for x, c in pts if c is not None]
        if len(have) < 2 or have[-1][0] <= have[0][0]:
            return 0.0
        return (have[-1][1] - have[0][1]) / (have[-1][0] - have[0][0])

    def top_type(self, prefix: str = "") -> Optional[str]:
        """The type that gained most over the censuses (as the agent reported growth), of
        those whose name starts with ``prefix`` (``"__main__."``: the script's own)."""
        gained: Dict[str, float] = {}
        for entry in self.entries[1:]:
            for g in as_list(entry.get("growing_types")):
                if isinstance(g, dict) and isinstance(g.get("type"), str):
                    if g["type"] in self.settled or not g["type"].startswith(prefix):
                        continue
                    gained[g["type"]] = gained.get(g["type"], 0.0) + (num(g.get("delta")) or 0.0)
        best = max(gained.items(), key=lambda kv: kv[1], default=None)
        return best[0] if best is not None and best[1] >= MIN_ITEMS else None

    def growing_module_type(self) -> Optional[str]:
        first = _get(self.entries[0], "modules", "types") if self.entries else None
        last = _get(self.entries[-1], "modules", "types") if self.entries else None
        if not isinstance(last, dict):
            return None
        first = first if isinstance(first, dict) else {}
        deltas = {k: (num(v) or 0.0) - (num(first.get(k)) or 0.0) for k, v in last.items()}
        # the model a person wrote (``ConvNet``) before the layers inside it (``Conv2d``)
        best = max(
            ((k, d) for k, d in deltas.items() if d > 0),
            key=lambda kv: (not kv[0].startswith("torch."), kv[1]),
            default=None,
        )
        return best[0] if best is not None else None

    def kind_types(self, kind: str) -> List[str]:
        """Type names the agent marked as ``tensor``, ``module``, ``ndarray`` or ``figure``."""
        types = self.entries[-1].get("types") if self.entries else None
        if not isinstance(types, dict):
            return []
        return [k for k, v in types.items() if isinstance(v, dict) and v.get("kind") == kind]

    def growing(self, min_items: int = MIN_ITEMS) -> List[Container]:
        """Containers that gained items, lists of plain numbers left out (a few bytes a step)."""
        return [
            c
            for c in self.containers
            if c.growth >= min_items
            and c.per_step > 0
            and not c.scalar
            and (self.active is None or c.holder in self.active)
        ]

    def top_container(self, no_logs: bool = False) -> Optional[Container]:
        """The growing container to blame: a named one, growing fastest (to a tenth: lists
        filled in the same loop grow alike), then the one whose items hold most bytes.
        ``no_logs``: of those that hold more than a log of small records (``light``), from
        half the items: beside a log that grows every step, a dict that gains a closure an
        epoch has few items to show between a short run's censuses."""
        if no_logs:
            boxes = [b for b in self.growing(MIN_ITEMS // 2) if not light(b)]
        else:
            boxes = self.growing()
        return max(boxes, key=_blame_order, default=None)

    def container_of(self, type_name: str) -> Optional[Container]:
        """The fastest-growing container whose last items are of this type."""
        tensor = type_name == "torch.Tensor"
        boxes = [
            c
            for c in self.growing()
            if type_name in c.elem_types
            or (tensor and any(t.endswith("Tensor") for t in c.elem_types))
        ]
        return max(boxes, key=_blame_order, default=None)


# root nodes of a step's own values (its loss, a mean of it, a layer's output): what an
# accumulator or a recurrent state carries along, rarely the state itself
_STEP_VALUE_NODES = ("Loss", "Mean", "Sum", "Squeeze", "Addmm", "Mm", "View", "Softmax")


# the root of a running sum (`total += loss`, `running = running + x`)
SUM_NODES = frozenset(["AddBackward0", "SumBackward0"])


def _step_value(node: Optional[str]) -> bool:
    return node is not None and any(k in node for k in _STEP_VALUE_NODES)


# the names ML code gives a step's own values; the state it carries is named otherwise
_STEP_NAMES = frozenset(
    ["loss", "losses", "logits", "out", "output", "outputs", "pred", "preds", "y_hat", "yhat"]
)


def _step_name(holder: str) -> bool:
    last = holder.rsplit(":", 1)[-1].rsplit(".", 1)[-1].lower()
    return last in _STEP_NAMES


LIGHT_BYTES = 256 * 1024  # a container of plain records holding less than this is a log
_PLAIN_ITEMS = frozenset(
    ["dict", "tuple", wire.NUMBER_TUPLE, "list", "float", "int", "str", "bool", "NoneType"]
)


def light(c: Container) -> bool:
    """A log of small plain records (a metrics history, a list of result dicts): its items
    measured at under ``LIGHT_BYTES`` in all, each a builtin dict, tuple, list or number.
    It grows, but what it holds cannot be a memory leak of megabytes; something else is."""
    return (
        c.bytes is not None
        and c.bytes < LIGHT_BYTES
        and bool(c.elem_types)
        and set(c.elem_types) <= _PLAIN_ITEMS
    )


def _blame_order(c: Container) -> Tuple[bool, float, float]:
    rounded = float(f"{c.per_step:.1g}") if c.per_step > 0 else 0.0
    return (c.complete, rounded, c.bytes or 0.0)
