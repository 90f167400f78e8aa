"""Object census: one pass over ``gc.get_objects()``, by exact type, without side effects.

Only ``type(obj)`` is ever asked of an arbitrary object: ``isinstance`` and
``getattr`` can run code (lazy modules, deprecated attributes warn into the
target's stderr). Attributes are read from *type* objects through ``type``'s
own descriptors, so a metaclass cannot intercept them either (typeinfo.py). Tensors,
arrays, modules and figures are picked by walking each type's ``__mro__`` once per type.

The heavy loops run in C (``map``, ``itertools.compress``, ``Counter``); on a
heap larger than ``max_objects`` every k-th object is counted and the counts
are scaled (``stride`` > 1 in the payload).
"""

from __future__ import annotations

import collections
import gc
import itertools
import sys
import time
import weakref
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Set, Tuple

from . import graphs, sizes
from .cheap import atexit_count, frozen_count
from .containertypes import CONTAINER_TYPES, container_subclasses
from .typeinfo import Kinds, ident, is_heap_type, loaded_class, type_name
from .userroots import SUSPENDABLE, user_generators

TOP_TYPES = 15  # types listed in the payload by count (plus the watched ones)
_WRAPPER = "autograd node wrapper"  # a route of the object pass, no kind of the payload
_GENERATOR = "generator"  # likewise

_LIVE_GROUP = {"tensor": "tensors:count", "module": "modules:count", "figure": "figures:count"}


def take(
    max_objects: int,
    min_len: int,
    deadline_s: float,
    want: FrozenSet[str] = frozenset(),
    name: Optional[Callable[[Set[int]], Dict[int, str]]] = None,
    largest_before: int = 0,
    sample_of: FrozenSet[str] = frozenset(),
) -> Dict[str, Any]:
    """One census. Returns {"v": signals, "payload": details, "containers": {id: obj},
    "lengths": {id: len}, "graph_roots": [(grad_fn, a tensor holding it, its holder or None)],
    "live": {signal:
    [(weakref to a heap type, its exact count)]}} (``live`` calibrates the cheap live counts
    of tensors, modules, figures and the types named in ``want``; empty on a sampled heap).

    ``containers`` holds the target's containers of at least ``min_len`` items for
    the holder tracker; the caller must drop it before the census returns control, and
    ``generators`` (the target's suspended generators and coroutines) likewise.
    ``samples`` likewise: for each type named in ``sample_of``, a few of its instances
    (the youngest and the oldest: see ``_samples``).
    ``name`` (ids of the tensors that hold a graph -> the holder a person knows them
    by) puts the named ones first: their roots are read before the wrapper budget runs
    out on the nameless ones (old tensors a carried graph keeps alive).
    """
    t_start = time.perf_counter()
    deadline = t_start + deadline_s
    objs = gc.get_objects()
    total = len(objs)
    stride = 1
    if total > max_objects:
        stride = -(-total // max_objects)
        objs = objs[::stride]
    classes = list(map(type, objs))  # once: the passes below read it
    counts = collections.Counter(classes)
    samples = _samples(objs, classes, counts, sample_of) if sample_of else {}
    kinds = Kinds(counts)
    # autograd-node wrappers alive now (the target's and earlier censuses'): what the
    # graph walk may add to them is bounded (see graphs.py). Picked in the same pass as the
    # tensors, modules and containers: one pass over the whole heap less (a fifth of a
    # framework's census)
    route: Dict[type, str] = dict(kinds.of)
    route.update(dict.fromkeys(graphs.node_types().intersection(counts), _WRAPPER))
    # roots for the holder and handle searches (userroots.suspended_roots)
    route.update(dict.fromkeys(SUSPENDABLE, _GENERATOR))
    # containers: the builtin ones and their subclasses that read as they do (a Counter)
    cont_types = CONTAINER_TYPES.union(container_subclasses(counts))
    wanted = set(route) | cont_types
    picked = list(itertools.compress(objs, map(wanted.__contains__, classes)))
    del objs, classes
    # most of what is picked is containers: split in C, only the rest by a loop
    picked_classes = list(map(type, picked))
    conts = list(itertools.compress(picked, map(cont_types.__contains__, picked_classes)))
    by_kind: Dict[str, List[Any]] = collections.defaultdict(list)
    for obj in itertools.compress(picked, map(route.__contains__, picked_classes)):
        by_kind[route[type(obj)]].append(obj)
    del picked, picked_classes
    wrappers = by_kind.pop(_WRAPPER, [])
    generators = user_generators(by_kind.pop(_GENERATOR, []))
    live_wrappers = set(map(ident, wrappers))
    big = list(itertools.compress(conts, map(min_len.__le__, map(len, conts))))
    del conts
    # two flat dicts, no per-item tuples: allocating tracked objects here would set off
    # collections of the whole heap in the middle of the census
    containers = dict(zip(map(ident, big), big))
    lengths = dict(zip(map(ident, big), map(len, big)))
    del big
    t_pass = time.perf_counter()

    v: Dict[str, float] = {}
    payload: Dict[str, Any] = {"objects_total": total, "stride": stride}
    # gc.freeze()'s objects (gc.get_objects() skips them); the callbacks atexit keeps (in C:
    # an object kept by ``atexit.register(self.flush)`` has no referrer a census can see)
    payload["gc"] = {"frozen": frozen_count(), "atexit": atexit_count()}
    graph_roots: List[Any] = []
    names = {cls: type_name(cls) for cls in counts}
    payload["_counts"] = {names[c]: n * stride for c, n in counts.items()}
    live: Dict[str, List[Tuple[Any, int]]] = {}
    if stride == 1:
        for cls, n in counts.items():
            group = _LIVE_GROUP.get(kinds.of.get(cls, ""))
            if group is None and names[cls] in want:
                group = f"objects:{names[cls]}"
            if group is not None and is_heap_type(cls):
                live.setdefault(group, []).append((weakref.ref(cls), n))
        # torch imported, no tensor made yet (a census before the loop): count from zero,
        # so the tensors made from now on are counted at every cheap sample
        tensor = loaded_class("torch", "Tensor")
        if tensor is not None and tensor not in counts and is_heap_type(tensor):
            live.setdefault(_LIVE_GROUP["tensor"], []).append((weakref.ref(tensor), 0))
        tensor = None
    types: Dict[str, Dict[str, Any]] = {}
    for cls, n in counts.most_common(TOP_TYPES):
        types[names[cls]] = {"count": n * stride}
    for cls, kind in kinds.of.items():
        entry = types.setdefault(names[cls], {"count": counts[cls] * stride})
        entry["kind"] = kind
    payload["types"] = types

    truncated: List[str] = []
    budget = graphs.WrapBudget(live_wrappers)
    del live_wrappers
    # the wrappers alive before this census, by id: was an earlier census' root kept?
    wrappers_by_id = dict(zip(map(ident, wrappers), wrappers))
    del wrappers
    tensors = by_kind.get("tensor")
    if tensors is not None or "torch" in sys.modules:
        holding, largest = _tensor_stats(
            tensors or [], kinds, stride, v, payload, deadline, truncated
        )
        _name_largest(largest, payload, name, largest_before)
        del largest
        names_of: Dict[int, str] = {}
        if name is not None and holding:
            names_of = name({ident(t) for t in holding})
            holding.sort(key=lambda t: ident(t) not in names_of)  # named first, order kept
        roots, owners, all_roots = _roots(holding, budget, set(names_of))
        del holding
        g = graphs.graph_stats(roots, budget, deadline=deadline)
        if (budget.walk_spent or not all_roots) and g["cut"] is None:
            g["cut"], g["truncated"] = "wrappers", True  # spent on the roots already
        if g.pop("truncated"):
            truncated.append("graphs")
        root = g.pop("root")
        graph_roots = [
            (fn, owners[ident(fn)], names_of.get(ident(owners[ident(fn)]))) for fn in roots
        ]
        del roots, root, owners
        g["live_wrappers"] = len(budget.known)
        payload["graphs"] = g
        if g["cut"] is None:
            v["graph:nodes"], v["graph:roots"], v["graph:largest"] = (
                g["nodes"],
                g["roots"],
                g["largest"],
            )
        mods = by_kind.get("module", [])
        v["modules:count"] = len(mods) * stride
        mtypes = collections.Counter(names[type(m)] for m in mods)
        payload["modules"] = {"count": len(mods) * stride, "types": dict(mtypes.most_common(10))}
        v["modules:param_bytes"] = payload["tensors"].get("param_bytes", 0)
    if "numpy" in sys.modules:
        arrays = by_kind.get("ndarray", [])
        nbytes = 0
        for a in arrays:
            try:
                nbytes += a.nbytes  # exact ndarray subclasses only: a C getter
            except Exception:  # noqa: BLE001
                pass
        v["ndarray:count"], v["ndarray:bytes"] = len(arrays) * stride, nbytes * stride
        payload["ndarray"] = {"count": len(arrays) * stride, "bytes": nbytes * stride}
    if "matplotlib.figure" in sys.modules:
        v["figures:count"] = len(by_kind.get("figure", [])) * stride
        payload["figures"] = {"count": v["figures:count"]}
    payload["truncated"] = truncated
    payload["timings"] = {
        "objects_s": round(t_pass - t_start, 4),
        "details_s": round(time.perf_counter() - t_pass, 4),
    }
    return {
        "v": v,
        "payload": payload,
        "containers": containers,
        "lengths": lengths,
        "graph_roots": graph_roots,
        "wrap_budget": budget,
        "wrappers": wrappers_by_id,
        "live": live,
        "samples": samples,
        "generators": generators,
    }


def _samples(
    objs: List[Any], classes: List[type], counts: Any, names: FrozenSet[str]
) -> Dict[str, List[Any]]:
    """A few instances of each type named: the first in ``gc.get_objects()``'s order (the
    youngest generation comes first) and the last (the oldest), found in C."""
    out: Dict[str, List[Any]] = {}
    backwards: Optional[List[type]] = None
    for cls in counts:
        name = type_name(cls)
        if name not in names:
            continue
        if backwards is None:
            backwards = classes[::-1]
        first = classes.index(cls)
        last = len(classes) - 1 - backwards.index(cls)
        out[name] = [objs[first]] + ([objs[last]] if last != first else [])
    return out


NAMELESS_ROOTS = 256  # graph roots read per census for tensors nobody names


def _roots(
    holding: List[Any], budget: graphs.WrapBudget, named: Set[int]
) -> Tuple[List[Any], Dict[int, Any], bool]:
    """The distinct ``grad_fn`` of the tensors that hold a graph, one tensor holding each,
    and whether all were read. Reading ``grad_fn`` may create a wrapper: named tensors
    (first in ``holding``) may use the whole budget, the others (old tensors a carried
    graph keeps alive, one per step) only the walk's share and ``NAMELESS_ROOTS``."""
    fns: Dict[int, Any] = {}
    owners: Dict[int, Any] = {}
    nameless = 0
    complete = True
    for t in holding:
        is_named = ident(t) in named
        if not is_named:
            nameless += 1
            if nameless > NAMELESS_ROOTS:
                complete = False
                break
        try:
            fn = t.grad_fn
        except Exception:  # noqa: BLE001
            continue
        if fn is None:
            continue
        if not budget.admit(fn, walk=not is_named):
            complete = False
            break
        if ident(fn) not in fns:
            fns[ident(fn)] = fn
            owners[ident(fn)] = t
    return list(fns.values()), owners, complete


_MiB = 1 << 20


def _name_largest(
    largest: Any,
    payload: Dict[str, Any],
    name: Optional[Callable[[Set[int]], Dict[int, str]]],
    before: int,
) -> None:
    """Name the holder of the largest tensor when it grew by a MiB or more since the last
    census (``before``: its bytes then; ``bank = torch.cat([bank, z])``: the tensor count
    stays, its bytes climb)."""
    info = payload.get("tensors", {}).get("largest")
    if largest is None or not isinstance(info, dict):
        return
    grew = before > 0 and int(info.get("bytes", 0)) - before >= _MiB
    if grew and name is not None:
        holder = name({ident(largest)}).get(ident(largest))
        if holder:
            info["holder"] = holder


def _tensor_stats(
    tensors: List[Any],
    kinds: Kinds,
    stride: int,
    v: Dict[str, float],
    payload: Dict[str, Any],
    deadline: float,
    truncated: List[str],
) -> Tuple[List[Any], Any]:
    """Count and bytes by device/dtype (each storage once); returns the tensors that hold
    an autograd graph, found without reading ``grad_fn`` (see graphs.py), and the tensor
    (not a parameter) that reaches the most bytes."""
    torch = sys.modules.get("torch")
    ctx = getattr(getattr(torch, "_C", None), "DisableTorchFunctionSubclass", None)
    extent: Dict[Tuple[str, int], int] = {}  # (device, storage base address) -> bytes used
    kind_of: Dict[Tuple[str, int], Tuple[str, bool]] = {}
    by: Dict[Tuple[str, str], List[int]] = {}
    holding: List[Any] = []
    largest: Any = None
    largest_bytes = 0
    grad_fn_count = 0
    grad_graphs = 0  # leaves whose .grad holds a graph: backward(create_graph=True)
    grads = graphs.grads_readable()
    done = 0
    guard = ctx() if ctx is not None else _Null()
    with guard:
        for t in tensors:
            if done & 255 == 0 and done and time.perf_counter() > deadline:
                truncated.append("tensors")
                break
            done += 1
            try:
                if graphs.holds_graph(t):
                    grad_fn_count += 1
                    holding.append(t)
                elif grads and graphs.grad_holds_graph(t):
                    grad_graphs += 1
                dev = str(t.device)
                dtype = str(t.dtype).replace("torch.", "")
                by.setdefault((dev, dtype), [0, 0])[0] += 1
                sparse = sizes.sparse_extents(t)
                for key, nbytes in sparse or ():
                    if nbytes > extent.get(key, 0):
                        extent[key], kind_of[key] = nbytes, (dtype, False)
                if sparse is not None or t.numel() == 0:
                    continue
                # the storage's base address and the bytes this view reaches, from C getters
                # only: t.untyped_storage() would pin a Python object to every storage for good
                size = t.element_size()
                off = t.storage_offset()
                reach = off + 1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()))
                key = (dev, t.data_ptr() - off * size)
            except Exception:  # noqa: BLE001 - meta, sparse, exotic subclasses: count only
                continue
            if reach * size > extent.get(key, 0):
                extent[key] = reach * size
                kind_of[key] = (dtype, type(t) in kinds.param_types)
            if reach * size > largest_bytes and type(t) not in kinds.param_types:
                largest, largest_bytes = t, reach * size
    dev_bytes: Dict[str, int] = collections.defaultdict(int)
    param_bytes = 0
    for (dev, _), nbytes in extent.items():
        dev_bytes[dev] += nbytes
    for key, (dtype, is_param) in kind_of.items():
        by[(key[0], dtype)][1] += extent[key]
        if is_param:
            param_bytes += extent[key]
    scale = stride if done == len(tensors) else stride * len(tensors) / max(1, done)
    count = len(tensors) * stride
    v["tensors:count"] = count
    v["tensors:grad_fn_count"] = round(grad_fn_count * scale)
    v["tensors:cpu_bytes"] = round(dev_bytes.get("cpu", 0) * scale)
    for dev, nb in dev_bytes.items():
        if dev != "cpu":
            v[f"tensors:{dev}_bytes"] = round(nb * scale)
    payload["tensors"] = {
        "count": count,
        "grad_fn_count": v["tensors:grad_fn_count"],
        "grad_graphs": round(grad_graphs * scale),
        "bytes_by_device": {d: round(b * scale) for d, b in dev_bytes.items()},
        "param_bytes": round(param_bytes * scale),
        "by": [
            {"device": d, "dtype": dt, "count": round(r[0] * scale), "bytes": round(r[1] * scale)}
            for (d, dt), r in sorted(by.items(), key=lambda kv: -kv[1][1])[:12]
        ],
    }
    if largest is not None:
        try:
            payload["tensors"]["largest"] = {
                "bytes": largest_bytes,
                "shape": list(largest.shape),
                "dtype": str(largest.dtype).replace("torch.", ""),
                "device": str(largest.device),
            }
        except Exception:  # noqa: BLE001
            largest = None
    return holding, largest


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def qualified(obj: Any) -> str:
    return type_name(type(obj))


def optional_int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
