"""From a census profile to a culprit: which pattern explains one growing signal
(:func:`culprit_for`), and the patterns other than the tensor ones (models kept, figures
never closed, NumPy arrays kept, unbounded containers, objects of one type).
"""

from __future__ import annotations

from typing import Optional

from memprobe.analysis.census import Container, Profile, light
from memprobe.analysis.census_groups import filled_in_turn, tree_of_dicts
from memprobe.analysis.chains import longest
from memprobe.analysis.culprit_make import (
    TENSOR,
    Culprit,
    classes_after,
    classes_text,
    evidence_of,
    make_culprit,
)
from memprobe.analysis.culprit_tensors import graph_culprit, growing_tensor, tensors_culprit
from memprobe.analysis.hints import (
    HINT_CHAIN,
    HINT_CONTAINER,
    HINT_CVAR_DEFAULT,
    HINT_CYCLE,
    HINT_FIGURE,
    HINT_FINALIZE,
    HINT_GC_FREEZE,
    HINT_GROWING_ARRAY,
    HINT_GROWING_TENSOR,
    HINT_HOOKS,
    HINT_LOGGERS,
    HINT_LRU,
    HINT_MODULE,
    HINT_NUMPY,
    HINT_OBJECTS,
    HINT_PICKLER,
    HINT_SUBMODULE,
    HINT_SYS_MODULES,
    HINT_TEE,
    HINT_TRACEBACK_CHAIN,
    HINT_TREE,
)
from memprobe.analysis.series import container_holder
from memprobe.analysis.wording import fmt_count
from memprobe.bootstrap.memprobe_agent import wire

PYPLOT_FIGURES = "matplotlib.pyplot's open figures (Gcf.figs)"
FIGURE = "matplotlib.figure.Figure"
NDARRAY = wire.NDARRAY
SCALARS = wire.SCALAR_TYPES
FINALIZE_REGISTRY = "weakref.finalize._registry"  # named so by the agent (roots.py)
LOGGER_REGISTRY = "logging.Logger.manager.loggerDict"  # likewise
SYS_MODULES = "sys.modules"  # the interpreter's own registry of modules
CVAR_DEFAULT = "(default=…)"  # a contextvars.ContextVar's default (the agent's holders.py)
TEE_BRANCH = "itertools._tee"  # watched by its backlog (the agent's tees.py)
GC_FROZEN = wire.GC_FROZEN  # objects in the permanent generation
FROZEN_HOLDER = "gc.freeze() (the permanent generation)"
MIN_FROZEN = 64  # objects frozen in all: one gc.freeze() after start-up is no leak


def culprit_for(signal: str, prof: Profile) -> Optional[Culprit]:
    """The culprit behind one growing signal of a process, or None when nothing explains it."""
    if prof.n < 2:
        # no census (a DataLoader worker): a watched container still names itself
        return _named_by_signal(signal, prof)
    holder = container_holder(signal)
    if holder is not None:
        box = next((b for b in prof.containers if b.holder == holder), None)
        if prof.active is not None and holder not in prof.active:
            box = None  # its own length series says it stopped: not what keeps growing
        box = _in_tree(prof, box) if box is not None else None
        return _container(prof, box) if box is not None else primary(prof)
    if signal.startswith("objects:"):
        return _of_type(prof, signal[len("objects:") :])
    if signal.startswith(("tensors:", "graph:")):
        return graph_culprit(prof) or tensors_culprit(prof) or primary(prof)
    if signal == GC_FROZEN:
        return _frozen(prof) or primary(prof)
    if signal.startswith("modules:"):
        return _modules(prof) or primary(prof)
    if signal.startswith("figures:"):
        return _kind(prof, FIGURE, "figures", HINT_FIGURE) or primary(prof)
    if signal.startswith("ndarray:"):
        return _kind(prof, NDARRAY, "ndarrays", HINT_NUMPY) or primary(prof)
    return primary(prof)


def _named_by_signal(signal: str, prof: Profile) -> Optional[Culprit]:
    holder = container_holder(signal)
    if holder is None:
        return None
    return make_culprit(
        prof,
        None,
        holder,
        False,
        "unbounded container",
        HINT_CONTAINER,
        f"`{holder}` gains items every {prof.per} and is never cleared.",
        {},
        None,
    )


# -- patterns, most specific first -----------------------------------------------------------


def primary(prof: Profile) -> Optional[Culprit]:
    """The process-wide culprit, for signals that say only that memory grows."""
    for fn in (_frozen, graph_culprit, _modules, _figures, _numpy):
        c = fn(prof)
        if c is not None:
            return c
    box = _in_tree(prof, prof.top_container()) or filled_in_turn(prof)
    if box is not None and light(box):
        # a log of small records grows beside what leaks: the program's own objects that
        # accumulate, another growing container that holds more than records (an optimizer's
        # hook dict gaining a closure an epoch), or the tensors, are named instead
        heavier = prof.top_container(no_logs=True)
        other = (
            _own_type(prof)
            or (_container(prof, heavier) if heavier is not None else None)
            or tensors_culprit(prof)
        )
        if other is not None:
            return other
    if box is not None:
        return _container(prof, box)
    grown = growing_tensor(prof)
    if grown is not None:
        return grown
    top = prof.top_type()
    return _of_type(prof, top) if top is not None else None


def _frozen(prof: Profile) -> Optional[Culprit]:
    """Objects ``gc.freeze()`` keeps growing in number: garbage it froze is never freed."""
    grown = prof.count_grown(GC_FROZEN, MIN_FROZEN)
    if grown is None:
        return None
    rate, now = grown
    return make_culprit(
        prof,
        "objects frozen by gc.freeze()",
        FROZEN_HOLDER,
        False,
        "frozen garbage",
        HINT_GC_FREEZE,
        f"gc.freeze() moves {fmt_count(rate)} more objects per {prof.per} to the collector's "
        f"permanent generation ({now:,.0f} now), where garbage in reference cycles is never "
        "collected.",
        evidence_of(per_step=rate, frozen=round(now)),
        None,
    )


def _own_type(prof: Profile) -> Optional[Culprit]:
    """The script's own class (``__main__``) whose live instances grew most, if any grew."""
    top = prof.top_type("__main__.")
    return _of_type(prof, top) if top is not None else None


def _modules(prof: Profile) -> Optional[Culprit]:
    rate = prof.rate("modules:count")
    if rate <= 0 or prof.growth("modules:count") < 2:
        return None
    kinds = set(prof.kind_types("module"))
    boxes = [b for b in prof.growing() if kinds.intersection(b.elem_types)]
    box = max(boxes, key=lambda b: (b.complete, b.per_step), default=None)
    if box is not None:
        name = next(t for t in box.elem_types if t in kinds)
    else:
        name = prof.growing_module_type() or "torch.nn.Module"
    params = round(prof.rate("modules:param_bytes"))
    ev = evidence_of(per_step=rate, module_type=name, param_bytes_per_step=params)
    sentence = f"{fmt_count(rate)} more `{name}` instances per {prof.per} stay alive" + (
        " with their parameters." if params > 0 else " (no parameters of their own)."
    )
    if box is None:  # the models sit inside the items of a growing container (records)
        # ... one that holds more than a log of small records (``light``): a sweep's list
        # of result dicts grows a trial at a time beside the hook dict that keeps the models
        box = prof.top_container(no_logs=True)
        if box is not None:
            elem = box.elem_types[0] if box.elem_types else "item"
            sentence = (
                f"`{box.holder}` (a {box.type}) gains {fmt_count(box.per_step)} {elem} "
                f"per {prof.per} "
                f"({box.len:,} now), holding {fmt_count(rate)} more `{name}` instances per "
                f"{prof.per} with their parameters."
            )
    return make_culprit(
        prof,
        name,
        box.holder if box else None,
        False,
        "models kept",
        HINT_MODULE if params > 0 else HINT_SUBMODULE,
        sentence,
        ev,
        box,
    )


def _figures(prof: Profile) -> Optional[Culprit]:
    return _kind(prof, FIGURE, "figures", HINT_FIGURE)


def _numpy(prof: Profile) -> Optional[Culprit]:
    return _kind(prof, NDARRAY, "ndarray", HINT_NUMPY)


def _kind(prof: Profile, type_name: str, key: str, hint: str) -> Optional[Culprit]:
    signal = "figures:count" if key == "figures" else "ndarray:count"
    rate = prof.rate(signal)
    if rate <= 0 or prof.growth(signal) < 4:
        return None
    box = prof.container_of(type_name)
    if box is None and key == "figures":  # pyplot keeps a manager per open figure (Gcf.figs)
        box = next(
            (b for b in prof.growing() if any("FigureManager" in t for t in b.elem_types)), None
        )
    holder = box.holder if box else None
    if holder is None and key == "figures":
        # no container of the user's holds them: pyplot does, until plt.close(fig)
        holder = PYPLOT_FIGURES
    ev = evidence_of(per_step=rate)
    if key != "figures":
        ev["bytes_per_step"] = round(prof.rate("ndarray:bytes"))
    where = " (kept open by pyplot)" if holder == PYPLOT_FIGURES else ""
    return make_culprit(
        prof,
        type_name,
        holder,
        False,
        key,
        hint,
        f"{fmt_count(rate)} more live `{type_name}` per {prof.per}{where}.",
        ev,
        box,
    )


def _container(prof: Profile, box: Container) -> Culprit:
    if box.type.startswith("tree of"):
        return _tree(prof, box)
    elem = box.elem_types[0] if box.elem_types else None
    if elem is not None and _is_tensor(elem):
        graph = graph_culprit(prof)
        if graph is not None and graph.holds_autograd_graph and graph.pattern == "retained graphs":
            return graph
    if box.type == NDARRAY:
        hint = HINT_GROWING_ARRAY  # its items are its elements (the agent's watch of arrays)
    elif box.type == TENSOR:
        hint = HINT_GROWING_TENSOR  # likewise a tensor rebuilt longer (``torch.cat``)
    elif elem == FIGURE:
        hint = HINT_FIGURE
    elif elem == NDARRAY:
        hint = HINT_NUMPY
    elif elem is not None and prof.rate("modules:count") > 0 and elem == prof.growing_module_type():
        hint = HINT_MODULE
    elif box.holder.endswith(".<lru_cache>"):
        hint = HINT_LRU
    elif box.holder.endswith(".<cycle saved>"):
        hint = HINT_CYCLE  # the agent's path through itertools.cycle (holders.py)
    elif box.holder == FINALIZE_REGISTRY:
        hint = HINT_FINALIZE
    elif box.holder == LOGGER_REGISTRY:
        hint = HINT_LOGGERS
    elif box.holder == SYS_MODULES:
        hint = HINT_SYS_MODULES
    elif box.holder.endswith(CVAR_DEFAULT):
        hint = HINT_CVAR_DEFAULT
    elif box.type == TEE_BRANCH:
        hint = HINT_TEE
    elif box.type.endswith("Pickler"):
        hint = HINT_PICKLER  # a keeper of references (the agent's referents.py)
    elif box.holder.endswith(("._backward_hooks", "._post_accumulate_grad_hooks")):
        hint = HINT_HOOKS
    else:
        hint = HINT_CONTAINER
    what = elem or "item"
    if box.type in (NDARRAY, TENSOR):
        what, elem = f"{elem or '?'} elements", box.type
    keys = [k for k in box.key_types if k not in SCALARS]
    ev = evidence_of(per_step=box.per_step, container_len=box.len, container_type=box.type)
    if keys and (elem is None or elem in SCALARS):
        # its memory is in its keys (every distinct message a warnings registry has seen, a
        # cache keyed by each input's text): what accumulates is the key
        what = f"entries (`{keys[0]}` keys, `{elem or '?'}` values)"
        elem = keys[0]
        ev["key_type"] = elem
    return make_culprit(
        prof,
        elem or box.type,
        box.holder,
        False,
        "unbounded container",
        hint,
        f"`{box.holder}` (a {box.type}{_on_class(box)}) gains {fmt_count(box.per_step)} {what} "
        f"per {prof.per} ({box.len:,} now).",
        ev,
        box,
    )


def _in_tree(prof: Profile, box: Optional[Container]) -> Optional[Container]:
    """The tree of nested dicts a growing container is a node of (a trie's node fills up to
    a few dozen children: the tree is what grows), else the container itself; with no
    container, the tree alone."""
    tree = tree_of_dicts(prof)
    if tree is not None and (box is None or box.holder.startswith(tree.holder + "[")):
        return tree
    return box


def _tree(prof: Profile, box: Container) -> Culprit:
    node = box.elem_types[0] if box.elem_types else "dict"
    return make_culprit(
        prof,
        node,
        box.holder,
        False,
        "growing tree",
        HINT_TREE,
        f"`{box.holder}` (a {box.type}) keeps branching: nodes at several depths below it "
        f"gain items census after census, and the process gains {fmt_count(box.per_step)} "
        f"`{node}` per {prof.per}.",
        evidence_of(per_step=box.per_step, container_type=box.type),
        box,
    )


def _of_type(prof: Profile, name: str) -> Optional[Culprit]:
    if _is_tensor(name):
        return graph_culprit(prof) or tensors_culprit(prof)
    box = prof.container_of(name)
    if box is not None:
        return _container(prof, box)
    rate = prof.type_rate(name)
    chain = longest(prof.entries, name)
    if chain is not None:
        holder, links, _, via, _, owners = chain
        link = f" linked by `.{via}`" if via else ""
        return make_culprit(
            prof,
            name,
            holder,
            False,
            "chain",
            HINT_TRACEBACK_CHAIN if name == "traceback" else HINT_CHAIN,
            f"{fmt_count(rate)} more live `{name}` objects per {prof.per}, each keeping the "
            f"one before it: `{holder}`{classes_after(owners)} heads a chain of {links:,}{link}.",
            evidence_of(per_step=rate, chain_links=links, holder_types=owners or None),
            None,
        )
    hint = {FIGURE: HINT_FIGURE, NDARRAY: HINT_NUMPY}.get(name, HINT_OBJECTS)
    return make_culprit(
        prof,
        name,
        None,
        False,
        "objects",
        hint,
        f"{fmt_count(rate)} more live `{name}` objects per {prof.per}.",
        evidence_of(per_step=rate),
        None,
    )


# -- helpers ---------------------------------------------------------------------------------


def _on_class(box: Container) -> str:
    """ ", `TrainingDashboard.ax_attn` › `Axes._children`" after a container's type."""
    return ", " + classes_text(box.owners) if box.owners else ""


def _is_tensor(name: str) -> bool:
    return name in (TENSOR, "torch.nn.parameter.Parameter") or name.endswith("Tensor")
