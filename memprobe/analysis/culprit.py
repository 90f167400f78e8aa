"""Name the culprit of each leak finding: what grows, who holds it, where it is allocated.

Pure: a run record's census payloads (written by the agent's census, see
``memprobe/bootstrap/memprobe_agent/expensive.py``) and the findings in,
findings with ``culprit``, ``evidence`` and a pattern's fix hint out. The
patterns are DESIGN.md's table: retained autograd graphs, state never
detached, unbounded containers, models kept alive, figures never closed,
NumPy temporaries kept. Non-leak findings pass through untouched.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple, cast

from memprobe.analysis.census import (
    SUM_NODES,
    Container,
    Profile,
    build_profile,
    series_lengths,
)
from memprobe.analysis.hints import (
    HINT_CARRIED,
    HINT_CONTAINER,
    HINT_DETACH,
    HINT_FIGURE,
    HINT_GROWING_TENSOR,
    HINT_HOOKS,
    HINT_ITEM,
    HINT_LRU,
    HINT_MODULE,
    HINT_NO_GRAD,
    HINT_NUMPY,
    HINT_OBJECTS,
)
from memprobe.analysis.holderline import grow_line
from memprobe.analysis.phases import census_after_steps
from memprobe.analysis.series import step_clock
from memprobe.analysis.wording import fmt_bytes
from memprobe.record import Culprit as RecordCulprit
from memprobe.record import Evidence, Finding, Process, RunRecord

__all__ = ["Culprit", "attribute", "culprit_for", "live_culprit", "watch_name"]

# graph roots a loss or a reduction of one ends in: a kept loss, not a kept model output
_LOSS_ROOT = re.compile(r"(Loss|Entropy|Mean|Sum|Div|Add|Sub|Mul|Neg|Pow|Exp|Log)Backward", re.I)

TENSOR = "torch.Tensor"
PYPLOT_FIGURES = "matplotlib.pyplot's open figures (Gcf.figs)"
FIGURE = "matplotlib.figure.Figure"
NDARRAY = "numpy.ndarray"


@dataclass(frozen=True)
class Culprit:
    """What one finding is blamed on."""

    type: Optional[str]
    holder: Optional[str]
    location: Optional[str]
    holds_autograd_graph: bool
    pattern: str
    fix_hint: Optional[str]
    sentence: str
    evidence: Evidence = field(default_factory=lambda: Evidence())

    def as_dict(self) -> RecordCulprit:
        return {
            "type": self.type,
            "holder": self.holder,
            "location": self.location,
            "holds_autograd_graph": self.holds_autograd_graph,
        }


def attribute(
    record: RunRecord,
    findings: List[Finding],
    verdicts: Optional[Mapping[Tuple[int, str], Any]] = None,
) -> List[Finding]:
    """Fill culprit, evidence and fix hint of every leak finding a census can explain.

    ``verdicts`` (the analysis' per-signal verdicts) keep a container from being blamed
    when its own length series says it stopped growing (a registry filled at start-up).
    """
    profiles: Dict[Optional[int], Profile] = {}
    # a stepping process' phase after its last step, judged on seconds (phases.py): its
    # findings are explained by the censuses of that phase
    after: Dict[Optional[int], Profile] = {}
    for proc in record.processes:
        active = _active_holders(proc.pid, verdicts) if verdicts is not None else None
        settled = _settled_types(proc.pid, verdicts) if verdicts is not None else None
        stepped = (
            sum(1 for c in proc.census if isinstance(c, dict) and isinstance(c.get("step"), int))
            >= 2
        )
        lengths = series_lengths(proc.series, stepped)
        clock = step_clock(proc.series) if stepped else None
        profiles[proc.pid] = build_profile(proc.census, active, lengths, settled, clock)
        tail = census_after_steps(proc) if stepped else None
        if tail is not None:
            after[proc.pid] = build_profile(
                tail, active, series_lengths(proc.series, False), settled
            )
    by_pid = {proc.pid: proc for proc in record.processes}
    out: List[Finding] = []
    sources = _user_sources(record)
    for f in findings:
        prof = profiles.get(f.pid)
        v = verdicts.get((f.pid, f.signal)) if verdicts is not None and f.pid else None
        if f.pid in after and getattr(v, "axis", None) == "time":
            prof = after[f.pid]
        leak = f.verdict == "leak" and f.kind == "leak"
        if leak and watch_name(f.signal) is not None:
            c: Optional[Culprit] = _watched(f.signal, by_pid.get(f.pid) if f.pid else None)
        else:
            c = culprit_for(f.signal, prof) if leak and prof else None
        if c is None:
            out.append(f)
            continue
        # the line that keeps it (the append, the +=) over the line that allocated it
        kept_at = grow_line(c.holder, sources) if c.holder else None
        if kept_at is not None:
            c = dataclasses.replace(c, location=kept_at)
        explanation = c.sentence + (" " + f.explanation if f.explanation else "")
        parts: Evidence = {"culprit_sentence": c.sentence, "signal_sentence": f.explanation}
        out.append(
            dataclasses.replace(
                f,
                culprit=c.as_dict(),
                evidence={**c.evidence, **f.evidence, **parts},
                fix_hint=c.fix_hint or f.fix_hint,
                explanation=explanation,
            )
        )
    return out


def _user_sources(record: RunRecord) -> List[str]:
    """The Python files the run's command lines name and its tracemalloc windows saw as
    the user's (absolute, existing), where a holder's growing line is looked for."""
    cwd = record.cwd or "."
    names: List[str] = []
    for argv in [record.command] + [p.argv for p in record.processes]:
        names.extend(a for a in argv or [] if isinstance(a, str) and a.endswith(".py"))
    for proc in record.processes:
        for c in proc.census:
            window = c.get("tracemalloc") if isinstance(c, dict) else None
            top = window.get("top") if isinstance(window, dict) else None
            for line in top if isinstance(top, list) else []:
                if (
                    isinstance(line, dict)
                    and line.get("user")
                    and isinstance(line.get("file"), str)
                ):
                    names.append(line["file"])
    out: List[str] = []
    for name in names:
        path = os.path.normpath(os.path.join(cwd, name))
        if path not in out and os.path.isfile(path):
            out.append(path)
    return out


def _active_holders(pid: int, verdicts: Mapping[Tuple[int, str], Any]) -> Set[str]:
    """Holders whose length series keeps rising: a leak, or rising at the detector's
    confidence without having stopped (a container gaining a model every forty steps is
    under the item count that is a leak on its own, yet it is the holder; a registry
    that filled at start-up has stopped)."""
    out: Set[str] = set()
    for (p, signal), v in verdicts.items():
        if p != pid or not signal.startswith("container:"):
            continue
        if _still_rising(v):
            out.add(signal[len("container:") :].rsplit(":", 1)[0])
    return out


def _still_rising(v: Any) -> bool:
    """A leak, or rising at the detector's confidence without having stopped."""
    return bool(v.verdict == "leak" or (v.ci_low > 0 and not v.plateau))


def _settled_types(pid: int, verdicts: Mapping[Tuple[int, str], Any]) -> Set[str]:
    """Types whose dense live count (``objects:<type>``) has stopped rising: the censuses
    saw them grow, but only while something filled (a replay buffer up to its ``maxlen``);
    memory that grows later is not theirs."""
    out: Set[str] = set()
    for (p, signal), v in verdicts.items():
        if p != pid or not signal.startswith("objects:"):
            continue
        if not _still_rising(v):
            out.add(signal[len("objects:") :])
    return out


def culprit_for(signal: str, prof: Profile) -> Optional[Culprit]:
    """The culprit behind one growing signal of a process, or None when nothing explains it."""
    if prof.n < 2:
        # no census (a DataLoader worker): a watched container still names itself
        return _named_by_signal(signal, prof)
    if signal.startswith("container:"):
        holder = signal[len("container:") :].rsplit(":", 1)[0]
        box = next((b for b in prof.containers if b.holder == holder), None)
        if prof.active is not None and holder not in prof.active:
            box = None  # its own length series says it stopped: not what keeps growing
        return _container(prof, box) if box is not None else _primary(prof)
    if signal.startswith("objects:"):
        return _of_type(prof, signal[len("objects:") :])
    if signal.startswith(("tensors:", "graph:")):
        return _graphs(prof) or _tensors(prof) or _primary(prof)
    if signal.startswith("modules:"):
        return _modules(prof) or _primary(prof)
    if signal.startswith("figures:"):
        return _kind(prof, FIGURE, "figures", HINT_FIGURE) or _primary(prof)
    if signal.startswith("ndarray:"):
        return _kind(prof, NDARRAY, "ndarrays", HINT_NUMPY) or _primary(prof)
    return _primary(prof)


WATCHED = "watched object"


def watch_name(signal: str) -> Optional[str]:
    """The name given to ``memprobe.watch`` in a ``watch:<name>:bytes|len`` signal."""
    if not signal.startswith("watch:"):
        return None
    return signal[len("watch:") :].rsplit(":", 1)[0]


def _watched(signal: str, proc: Optional[Process]) -> Culprit:
    """A watched object is its own culprit, named as the program named it."""
    name = watch_name(signal) or "?"
    series = proc.series.get(f"watch:{name}:bytes") if proc is not None else None
    evidence: Evidence = {"pattern": WATCHED, "watch": name}
    if series is not None and series.value:
        evidence["container_bytes"] = series.value[-1]
    return Culprit(
        type=None,
        holder=name,
        location=None,
        holds_autograd_graph=False,
        pattern=WATCHED,
        fix_hint=HINT_CONTAINER,
        sentence=f"`{name}` is watched (memprobe.watch).",
        evidence=evidence,
    )


_INTERPRETER_HOLDERS = ("sys.path_importer_cache", "sys.modules", "sys.path_hooks")


def live_culprit(process_census: Sequence[Dict[str, Any]]) -> Optional[str]:
    """One short line for the live table: the top growing thing and its holder, or None."""
    prof = build_profile(process_census)
    c = _primary(prof) if prof.n >= 2 else None
    if c is None or (c.holder or "").startswith(_INTERPRETER_HOLDERS):
        return None  # the import system's caches fill while a program imports
    graph = ", holds autograd graphs" if c.holds_autograd_graph else ""
    rate = c.evidence.get("per_step")
    what = f"{c.type}" if c.type else "objects"
    grows = isinstance(rate, (int, float)) and rate > 0
    grow = f" +{rate:.3g} {what}/{prof.per}" if grows else f" {what}"
    return f"{c.holder or '?'}{grow}{graph}"


def _named_by_signal(signal: str, prof: Profile) -> Optional[Culprit]:
    if not signal.startswith("container:"):
        return None
    holder = signal[len("container:") :].rsplit(":", 1)[0]
    return _make(
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


def _primary(prof: Profile) -> Optional[Culprit]:
    """The process-wide culprit, for signals that say only that memory grows."""
    for fn in (_graphs, _modules, _figures, _numpy):
        c = fn(prof)
        if c is not None:
            return c
    box = prof.top_container() or prof.filled_in_turn()
    if box is not None:
        return _container(prof, box)
    grown = _growing_tensor(prof)
    if grown is not None:
        return grown
    top = prof.top_type()
    return _of_type(prof, top) if top is not None else None


def _growing_tensor(prof: Profile) -> Optional[Culprit]:
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
    overtook = (
        len(sizes) >= 2
        and sizes[-1][0] > sizes[-2][0]
        and isinstance(sizes[-1][1].get("holder"), str)
        and _climbing(_total_tensor_bytes(prof))
    )
    if not named or not (rising or overtook):
        return None
    first, now = sizes[0][0], sizes[-1][0]
    if now - first < MIN_GROWING_TENSOR_BYTES:
        return None
    shape = "×".join(str(n) for n in sizes[-1][1].get("shape") or []) or "?"
    return _make(
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
        _ev(container_bytes=now),
        None,
    )


MIN_GROWING_TENSOR_BYTES = 4 * 2**20


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


def _graphs(prof: Profile) -> Optional[Culprit]:
    roots, largest = prof.rate("graph:roots"), prof.rate("graph:largest")
    grad = prof.rate("tensors:grad_fn_count")
    per_root = prof.at_peak("graph:roots", "graphs", "mean_per_root")
    holder, holder_node = prof.grown_graph_holder()  # set by the agent when largest grew
    # one graph growing: named by the agent, or bigger at two censuses running
    if largest > 0.5 and largest >= roots and (holder or prof.sustained("graph:largest", 2)):
        node = holder_node if holder else prof.last("graphs", "largest_root_type")
        accumulating = node in SUM_NODES
        box = prof.container_of(TENSOR)
        ev = _ev(
            per_step=largest,
            graph_nodes=prof.value("graph:largest"),
            largest_graph_nodes_per_step=round(largest, 2),
            graph_root=node,
        )
        who = f"`{holder}`" if holder else "a tensor"
        # a sum at the root (`total += loss`, a running mean): numbers or detached inputs;
        # anything else (a recurrent state): detach it at the step boundary
        return _make(
            prof,
            TENSOR,
            holder or (box.holder if accumulating and box else None),
            True,
            "graph carried across steps",
            HINT_CARRIED if accumulating else HINT_DETACH,
            f"{who} is carried across steps and built from each step's tensors: it "
            f"holds one autograd graph that gains {largest:.3g} nodes per {prof.per}.",
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
            who = f"`{box.holder}` (a {box.type}) gains {kept:.3g} torch.Tensor per {prof.per}"
            if extra:
                who += f" ({rate:.3g} tensors per {prof.per} stay alive with their graphs)"
        else:  # the tensors sit inside the items of a growing container (transitions, records)
            box = prof.top_container()
            elem = box.elem_types[0] if box and box.elem_types else "item"
            who = (
                (
                    f"`{box.holder}` (a {box.type}) gains {box.per_step:.3g} {elem} "
                    f"per {prof.per}, holding {rate:.3g} torch.Tensor per {prof.per}"
                )
                if box
                else f"{rate:.3g} more torch.Tensor per {prof.per} stay alive"
            )
        ev = _ev(
            per_step=rate,
            graph_nodes_per_root=per_root,
            graph_roots=prof.value("graph:roots"),
            container_len=box.len if box else None,
        )
        return _make(
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
    size = f": it gains {nodes:.3g} graph nodes per {prof.per}" if nodes > 0.5 else ""
    also = f" (so does `{others[0]['holder']}`)" if others else ""
    ev = _ev(
        graph_root=node,
        carried_censuses=int(top.get("kept", 0)),
        largest_graph_nodes_per_step=round(nodes, 2) if nodes > 0.5 else None,
        also_carried=[o["holder"] for o in others[:3]] or None,
    )
    return _make(
        prof,
        TENSOR,
        holder,
        True,
        "graph carried across steps",
        HINT_CARRIED if accumulating else HINT_DETACH,
        f"`{holder}`{also} is carried across steps without being detached: the autograd "
        f"graph of every earlier step stays attached to it{size}.",
        ev,
        None,
    )


def _tensors(prof: Profile) -> Optional[Culprit]:
    rate = prof.rate("tensors:count")
    if rate <= 0.05 or prof.growth("tensors:count") < 4:
        return None
    box = prof.container_of(TENSOR)
    ev = _ev(per_step=rate, tensor_bytes_per_step=round(prof.rate("tensors:cpu_bytes")))
    if box is None:  # the tensors sit inside the items of a growing container (transitions)
        inner = prof.top_container() or prof.filled_in_turn()
        if inner is not None:
            elem = inner.elem_types[0] if inner.elem_types else "item"
            return _make(
                prof,
                elem,
                inner.holder,
                False,
                "unbounded container",
                HINT_CONTAINER,
                f"`{inner.holder}` (a {inner.type}) gains {inner.per_step:.3g} {elem} per "
                f"{prof.per} ({inner.len:,} now), holding {rate:.3g} more torch.Tensor per "
                f"{prof.per} (no autograd graph).",
                ev,
                inner,
            )
    return _make(
        prof,
        TENSOR,
        box.holder if box else None,
        False,
        "tensors kept",
        HINT_CONTAINER if box else HINT_ITEM,
        f"{rate:.3g} more live tensors per {prof.per} (no autograd graph).",
        ev,
        box,
    )


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
    ev = _ev(
        per_step=rate,
        module_type=name,
        param_bytes_per_step=round(prof.rate("modules:param_bytes")),
    )
    sentence = (
        f"{rate:.3g} more `{name}` instances per {prof.per} stay alive with their parameters."
    )
    if box is None:  # the models sit inside the items of a growing container (records)
        box = prof.top_container()
        if box is not None:
            elem = box.elem_types[0] if box.elem_types else "item"
            sentence = (
                f"`{box.holder}` (a {box.type}) gains {box.per_step:.3g} {elem} per {prof.per} "
                f"({box.len:,} now), holding {rate:.3g} more `{name}` instances per "
                f"{prof.per} with their parameters."
            )
    return _make(
        prof,
        name,
        box.holder if box else None,
        False,
        "models kept",
        HINT_MODULE,
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
    ev = _ev(per_step=rate)
    if key != "figures":
        ev["bytes_per_step"] = round(prof.rate("ndarray:bytes"))
    where = " (kept open by pyplot)" if holder == PYPLOT_FIGURES else ""
    return _make(
        prof,
        type_name,
        holder,
        False,
        key,
        hint,
        f"{rate:.3g} more live `{type_name}` per {prof.per}{where}.",
        ev,
        box,
    )


def _container(prof: Profile, box: Container) -> Culprit:
    elem = box.elem_types[0] if box.elem_types else None
    if elem is not None and _is_tensor(elem):
        graph = _graphs(prof)
        if graph is not None and graph.holds_autograd_graph and graph.pattern == "retained graphs":
            return graph
    if elem == FIGURE:
        hint = HINT_FIGURE
    elif elem == NDARRAY:
        hint = HINT_NUMPY
    elif elem is not None and prof.rate("modules:count") > 0 and elem == prof.growing_module_type():
        hint = HINT_MODULE
    elif box.holder.endswith(".<lru_cache>"):
        hint = HINT_LRU
    elif box.holder.endswith(("._backward_hooks", "._post_accumulate_grad_hooks")):
        hint = HINT_HOOKS
    else:
        hint = HINT_CONTAINER
    what = elem or "item"
    ev = _ev(per_step=box.per_step, container_len=box.len, container_type=box.type)
    return _make(
        prof,
        elem or box.type,
        box.holder,
        False,
        "unbounded container",
        hint,
        f"`{box.holder}` (a {box.type}) gains {box.per_step:.3g} {what} per {prof.per} "
        f"({box.len:,} now).",
        ev,
        box,
    )


def _of_type(prof: Profile, name: str) -> Optional[Culprit]:
    if _is_tensor(name):
        return _graphs(prof) or _tensors(prof)
    box = prof.container_of(name)
    if box is not None:
        return _container(prof, box)
    rate = prof.type_rate(name)
    hint = {FIGURE: HINT_FIGURE, NDARRAY: HINT_NUMPY}.get(name, HINT_OBJECTS)
    return _make(
        prof,
        name,
        None,
        False,
        "objects",
        hint,
        f"{rate:.3g} more live `{name}` objects per {prof.per}.",
        _ev(per_step=rate),
        None,
    )


# -- helpers ---------------------------------------------------------------------------------


def _is_tensor(name: str) -> bool:
    return name in (TENSOR, "torch.nn.parameter.Parameter") or name.endswith("Tensor")


def _ev(**kw: Any) -> Evidence:
    """Evidence from keyword figures (the keys are Evidence's; floats rounded, Nones left out)."""
    return cast(
        Evidence,
        {k: (round(v, 4) if isinstance(v, float) else v) for k, v in kw.items() if v is not None},
    )


def _make(
    prof: Profile,
    type_name: Optional[str],
    holder: Optional[str],
    graph: bool,
    pattern: str,
    hint: Optional[str],
    sentence: str,
    ev: Evidence,
    box: Optional[Container],
) -> Culprit:
    location, traceback = prof.location()
    evidence: Evidence = {"pattern": pattern}
    if type_name:
        evidence["growing_type"] = type_name
    evidence.update(ev)
    if box is not None and box.chain:
        evidence["chain"] = list(box.chain)
    if box is not None and box.bytes is not None:
        evidence["container_bytes"] = box.bytes
    if traceback:
        evidence["allocated_at"] = traceback
    evidence["censuses"] = prof.n
    return Culprit(
        type=type_name,
        holder=holder,
        location=location,
        holds_autograd_graph=graph,
        pattern=pattern,
        fix_hint=hint,
        sentence=sentence,
        evidence=evidence,
    )
