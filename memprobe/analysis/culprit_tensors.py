"""Culprits of tensor leaks: retained autograd graphs, a graph carried across steps, one
tensor that keeps growing, tensors kept without a graph (see culprit.py)."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from memprobe.analysis.census import SUM_NODES, Profile, light
from memprobe.analysis.census_groups import filled_in_turn
from memprobe.analysis.culprit_make import (
    TENSOR,
    Culprit,
    classes_after,
    evidence_of,
    make_culprit,
)
from memprobe.analysis.hints import (
    HINT_CARRIED,
    HINT_CONTAINER,
    HINT_CREATE_GRAPH,
    HINT_DETACH,
    HINT_GROWING_TENSOR,
    HINT_ITEM,
    HINT_NO_GRAD,
    HINT_UNHELD,
)
from memprobe.analysis.wording import fmt_bytes, fmt_count

# graph roots a loss or a reduction of one ends in: a kept loss, not a kept model output
_LOSS_ROOT = re.compile(r"(Loss|Entropy|Mean|Sum|Div|Add|Sub|Mul|Neg|Pow|Exp|Log)Backward", re.I)


def growing_tensor(prof: Profile) -> Optional[Culprit]:
    """One tensor that gets longer census after census (the agent names its holder when it
    grew): the tensor count stays flat while tensor bytes climb."""
    sizes: List[Tuple[float, Dict[str, Any]]] = []
    for entry in prof.entries:
        tensors = entry.get("tensors") if isinstance(entry, dict) else None
        info = tensors.get("largest") if isinstance(tensors, dict) else None
        if isinstance(info, dict) and isinstance(info.get("bytes"), (int, float)):
            sizes.append((float(info["bytes"]), info))
    if len(sizes) >= 3 and sizes[-1][0] < 0.5 * sizes[-2][0]:
        sizes = sizes[:-1]  # the program let it go at exit
    named = [info["holder"] for _, info in sizes if isinstance(info.get("holder"), str)]
    last = sizes[-3:]
    rising = len(last) >= 3 and all(b[0] > a[0] for a, b in zip(last, last[1:]))
    # censuses are few and far apart: the tensor may have overtaken a bigger one that was
    # the largest before (a data tensor), so it shows as largest only lately; named at the
    # last census, bigger than before, while all tensor storage climbed census after census
    # (and accounts for a good part of that climb: a batch of 8 MiB beside 150 MiB of kept
    # embeddings is only the largest of the moment)
    total = _total_tensor_bytes(prof)
    overtook = (
        len(sizes) >= 2
        and sizes[-1][0] > sizes[-2][0]
        and isinstance(sizes[-1][1].get("holder"), str)
        and _climbing(total)
        and sizes[-1][0] >= OVERTOOK_SHARE * (total[-1] - total[0])
    )
    if not named or not (rising or overtook):
        return None
    first, now = sizes[0][0], sizes[-1][0]
    if now - first < MIN_GROWING_TENSOR_BYTES:
        return None
    shape = "×".join(str(n) for n in sizes[-1][1].get("shape") or []) or "?"
    return make_culprit(
        prof,
        TENSOR,
        named[-1],
        False,
        "growing tensor",
        HINT_GROWING_TENSOR,
        f"`{named[-1]}` is one tensor that keeps growing: {fmt_bytes(first)} → "
        f"{fmt_bytes(now)} ({shape} now) over {len(sizes)} censuses."
        if rising
        else f"`{named[-1]}` is one tensor that keeps growing: {fmt_bytes(now)} ({shape}) "
        f"at the last census, while the tensors' storage grew at every census.",
        evidence_of(container_bytes=now),
        None,
    )


MIN_GROWING_TENSOR_BYTES = 4 * 2**20
OVERTOOK_SHARE = 0.25  # of the tensors' storage climb, for a tensor seen largest only lately


def _total_tensor_bytes(prof: Profile) -> List[float]:
    out: List[float] = []
    for entry in prof.entries:
        tensors = entry.get("tensors") if isinstance(entry, dict) else None
        by_device = tensors.get("bytes_by_device") if isinstance(tensors, dict) else None
        if isinstance(by_device, dict):
            out.append(sum(float(b) for b in by_device.values() if isinstance(b, (int, float))))
    return out


def _climbing(values: List[float], n: int = 3) -> bool:
    """Rose at each of the last ``n`` points."""
    last = values[-n:]
    return len(last) >= n and all(b > a for a, b in zip(last, last[1:]))


MIN_CARRIED_NODES = 1.0  # per step (per second without steps)
MIN_GRAD_GRAPHS = 4  # leaves whose .grad holds a graph, gained over the censuses
GRAD_GRAPHS = "tensors:grad_graphs"


def grad_graph_culprit(prof: Profile) -> Optional[Culprit]:
    """Leaves (parameters) whose ``.grad`` holds an autograd graph, more and more of them:
    ``backward(create_graph=True)``, whose graph in ``.grad`` refers back to the parameter
    (a cycle through autograd's C++ objects: the collector never frees it, and the models
    the program dropped stay alive with it). Named by the attribute that holds the graph."""
    grown = prof.count_grown(GRAD_GRAPHS, MIN_GRAD_GRAPHS)
    if grown is None:
        return None
    rate, now = grown
    return make_culprit(
        prof,
        "torch.nn.parameter.Parameter",
        "Parameter.grad",
        True,
        "gradients that keep their graph",
        HINT_CREATE_GRAPH,
        f"{fmt_count(rate)} more parameters per {prof.per} stay alive with a `.grad` that holds "
        f"an autograd graph ({now:,.0f} now): each graph refers back to its parameter, a "
        "reference cycle through autograd that keeps them, and the models they belonged to, "
        "after the program dropped them.",
        evidence_of(per_step=rate, grad_graphs=round(now)),
        None,
    )


def graph_culprit(prof: Profile) -> Optional[Culprit]:
    grads = grad_graph_culprit(prof)
    if grads is not None:
        return grads
    roots, largest = prof.rate("graph:roots"), prof.rate("graph:largest")
    grad = prof.rate("tensors:grad_fn_count")
    per_root = prof.at_peak("graph:roots", "graphs", "mean_per_root")
    holder, holder_node = prof.grown_graph_holder()  # set by the agent when largest grew
    # one graph growing: named by the agent, or bigger at two censuses running; a graph
    # carried across steps gains a node or more at each (+58 nodes over 95 steps is one
    # forward pass longer than another: a beam search's decoded length)
    carried_rate = largest >= MIN_CARRIED_NODES
    if carried_rate and largest >= roots and (holder or prof.sustained("graph:largest", 2)):
        node = holder_node if holder else prof.last("graphs", "largest_root_type")
        accumulating = node in SUM_NODES
        box = prof.container_of(TENSOR)
        ev = evidence_of(
            per_step=largest,
            graph_nodes=prof.value("graph:largest"),
            largest_graph_nodes_per_step=round(largest, 2),
            graph_root=node,
        )
        types = prof.holder_types(holder) if holder else []
        who = f"`{holder}`{classes_after(types)}" if holder else "a tensor"
        if types:
            ev["holder_types"] = types
        # a sum at the root (`total += loss`, a running mean): numbers or detached inputs;
        # anything else (a recurrent state): detach it at the step boundary
        return make_culprit(
            prof,
            TENSOR,
            holder or (box.holder if accumulating and box else None),
            True,
            "graph carried across steps",
            HINT_CARRIED if accumulating else HINT_DETACH,
            f"{who} is carried across steps and built from each step's tensors: it "
            f"holds one autograd graph that gains {fmt_count(largest)} nodes per {prof.per}.",
            ev,
            None,
        )
    carried = prof.carried()
    if carried and prof.top_container() is None:
        # a growing container of the user's keeps the old graphs when there is one
        # (``stats[step] = {"loss": loss}``): carried state only without it
        return _carried(prof, carried[0], carried[1:])
    if max(roots, grad) > 0.05 and (
        prof.growth("graph:roots") >= 4 or prof.growth("tensors:grad_fn_count") >= 4
    ):
        rate = max(roots, grad)
        # the biggest graph a complete walk saw when the most roots were alive: one kept
        # item's graph (the mean over all roots mixes in every small one)
        biggest = prof.at_peak("graph:roots", "graphs", "largest")
        # what the kept roots are: the commonest root type where the most graph-holding
        # tensors were alive (the tensor pass counts them all; a graph walk that was cut
        # still says what its roots are, and the largest root of a whole walk may come from
        # another phase: a training step's loss before an eval loop's kept outputs)
        kinds = prof.at_peak("tensors:grad_fn_count", "graphs", "root_types")
        if isinstance(kinds, dict) and kinds:
            root_type: Any = str(max(kinds, key=lambda k: kinds[k]))
        else:
            root_type = prof.at_peak("graph:roots", "graphs", "largest_root_type")
        nodes = (
            f" of up to {biggest:.0f} nodes"
            if isinstance(biggest, (int, float)) and biggest >= 1
            else ""
        )
        hint = (
            HINT_NO_GRAD
            if isinstance(root_type, str) and not _LOSS_ROOT.search(root_type)
            else HINT_ITEM
        )
        box = prof.container_of(TENSOR)
        if box is None and not (
            prof.sustained("graph:roots") or prof.sustained("tensors:grad_fn_count")
        ):
            return None  # one jump between two censuses: a step's graphs, not a leak
        if box is not None:
            # more tensors than items: each item's graph keeps activations, saved tensors
            extra = 0 < box.per_step and 1.5 * box.per_step < rate
            kept = box.per_step if extra else rate
            who = (
                f"`{box.holder}` (a {box.type}) gains {fmt_count(kept)} torch.Tensor per {prof.per}"
            )
            if extra:
                who += f" ({fmt_count(rate)} tensors per {prof.per} stay alive with their graphs)"
        else:  # the tensors sit inside the items of a growing container (transitions, records)
            box = prof.top_container()
            elem = box.elem_types[0] if box and box.elem_types else "item"
            who = (
                (
                    f"`{box.holder}` (a {box.type}) gains {fmt_count(box.per_step)} {elem} "
                    f"per {prof.per}, holding {fmt_count(rate)} torch.Tensor per {prof.per}"
                )
                if box
                else f"{fmt_count(rate)} more torch.Tensor per {prof.per} stay alive"
            )
        ev = evidence_of(
            per_step=rate,
            graph_nodes_per_root=per_root,
            graph_roots=prof.value("graph:roots"),
            container_len=box.len if box else None,
        )
        return make_culprit(
            prof,
            TENSOR,
            box.holder if box else None,
            True,
            "retained graphs",
            hint,
            f"{who}; each keeps an autograd graph{nodes} alive.",
            ev,
            box,
        )
    return None


_ACCUMULATOR_NAME = re.compile(r"(total|sum|acc|running|avg|mean|ema|loss|stat)", re.I)


def _carried(prof: Profile, top: Dict[str, Any], others: List[Dict[str, Any]]) -> Culprit:
    """A named tensor whose graph of an earlier census was still alive at a later one: the
    old graph hangs below the new (the agent's check, for chains of any length)."""
    holder: str = top["holder"]
    node = top.get("node")
    name = holder.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
    accumulating = node in SUM_NODES and bool(_ACCUMULATOR_NAME.search(name))
    nodes = prof.rate("graph:largest")
    size = f": it gains {fmt_count(nodes)} graph nodes per {prof.per}" if nodes > 0.5 else ""
    also = f" (so does `{others[0]['holder']}`)" if others else ""
    types = prof.holder_types(holder)
    ev = evidence_of(
        graph_root=node,
        carried_censuses=int(top.get("kept", 0)),
        largest_graph_nodes_per_step=round(nodes, 2) if nodes > 0.5 else None,
        also_carried=[o["holder"] for o in others[:3]] or None,
        holder_types=types or None,
    )
    return make_culprit(
        prof,
        TENSOR,
        holder,
        True,
        "graph carried across steps",
        HINT_CARRIED if accumulating else HINT_DETACH,
        f"`{holder}`{classes_after(types)}{also} is carried across steps without being "
        "detached: the autograd "
        f"graph of every earlier step stays attached to it{size}.",
        ev,
        None,
    )


def tensors_culprit(prof: Profile) -> Optional[Culprit]:
    rate = prof.rate("tensors:count")
    if rate <= 0.05 or prof.growth("tensors:count") < 4:
        return None
    box = prof.container_of(TENSOR)
    ev = evidence_of(per_step=rate, tensor_bytes_per_step=round(prof.rate("tensors:cpu_bytes")))
    if box is None:  # the tensors sit inside the items of a growing container (transitions)
        inner = prof.top_container() or filled_in_turn(prof)
        if inner is not None and not light(inner):
            elem = inner.elem_types[0] if inner.elem_types else "item"
            return make_culprit(
                prof,
                elem,
                inner.holder,
                False,
                "unbounded container",
                HINT_CONTAINER,
                f"`{inner.holder}` (a {inner.type}) gains {fmt_count(inner.per_step)} {elem} per "
                f"{prof.per} ({inner.len:,} now), holding {fmt_count(rate)} more torch.Tensor per "
                f"{prof.per} (no autograd graph).",
                ev,
                inner,
            )
    return make_culprit(
        prof,
        TENSOR,
        box.holder if box else None,
        False,
        "tensors kept",
        HINT_CONTAINER if box else HINT_UNHELD,
        f"{fmt_count(rate)} more live tensors per {prof.per} (no autograd graph).",
        ev,
        box,
    )
