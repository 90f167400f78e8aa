"""The agent's census, graph walk, holder search and container tracker, in-process."""

from __future__ import annotations

import collections
import sys
import time
import types
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest

from memprobe.bootstrap.memprobe_agent import (
    census,
    cheap,
    containers,
    containertypes,
    expensive,
    graphs,
    holders,
    lrucache,
    native,
    roots,
    slots,
)
from memprobe.bootstrap.memprobe_agent.interrupts import Interrupts
from memprobe.bootstrap.memprobe_agent.typeinfo import ident

torch = pytest.importorskip("torch")

FAR = 10.0  # a deadline far enough not to cut anything in these small heaps


def _take(**kw: Any) -> Dict[str, Any]:
    return census.take(kw.get("max_objects", 5_000_000), kw.get("min_len", 4), FAR)


class Widget:
    pass


def test_counts_by_qualified_type() -> None:
    # GIVEN 500 live instances of a local class
    keep = [Widget() for _ in range(500)]
    # WHEN a census is taken
    res = _take()
    # THEN the full count table has them under their qualified name
    counts = res["payload"]["_counts"]
    assert counts[f"{__name__}.Widget"] >= 500
    assert res["payload"]["stride"] == 1
    del keep


def test_huge_heap_is_sampled_and_scaled() -> None:
    # GIVEN a census capped far below the heap's size
    keep = [Widget() for _ in range(20_000)]
    res = _take(max_objects=50_000)
    # THEN it counted every k-th object and scaled the counts back up
    payload = res["payload"]
    assert payload["stride"] > 1
    assert payload["objects_total"] > 50_000
    assert 15_000 <= payload["_counts"][f"{__name__}.Widget"] <= 25_000
    del keep


def test_tensor_bytes_count_shared_storage_once() -> None:
    # GIVEN one 1 MiB float32 tensor and three views of it, and a parameter
    base = torch.zeros(256, 1024)
    views = [base[:10], base.t(), base.view(-1)]
    param = torch.nn.Parameter(torch.zeros(1000))
    res_with = _take()
    del base, views
    res_without = _take()
    # THEN the storage counts once (1 MiB), the parameter's 4000 bytes are parameter bytes
    grown = res_with["v"]["tensors:cpu_bytes"] - res_without["v"]["tensors:cpu_bytes"]
    assert grown == 256 * 1024 * 4
    assert res_with["v"]["tensors:count"] - res_without["v"]["tensors:count"] == 4
    assert res_with["payload"]["tensors"]["param_bytes"] >= 4000
    del param


def test_retained_graphs_versus_one_growing_graph() -> None:
    lin = torch.nn.Linear(4, 4)
    # GIVEN ten losses kept with their graphs (the losses.append(loss) leak)
    kept = [lin(torch.randn(2, 4)).sum() for _ in range(10)]
    retained = _take()["v"]
    del kept
    # AND a state carried across 30 steps without detach (one ever-growing graph)
    h = torch.zeros(1, 4)
    for _ in range(30):
        h = torch.tanh(lin(h))
    growing = _take()["payload"]["graphs"]
    # THEN retained graphs show as many roots with a small largest graph...
    assert retained["graph:roots"] >= 10
    assert retained["tensors:grad_fn_count"] >= 10
    assert retained["graph:largest"] < 15
    # ...and the carried state as one root whose graph holds every step
    # (torch keeps each step's output tensor alive inside the graph, so roots grow too, but
    # the largest graph holds all of them)
    assert growing["largest"] >= 60
    assert growing["largest"] > 10 * growing["mean_per_root"]
    assert growing["largest_root_type"] == "TanhBackward0"
    del h


def test_graph_walk_is_bounded() -> None:
    lin = torch.nn.Linear(2, 2)
    h = torch.zeros(1, 2)
    for _ in range(200):
        h = lin(h)
    stats = graphs.graph_stats(
        [h.grad_fn], graphs.WrapBudget(()), deadline=time.perf_counter() + FAR, max_nodes=50
    )
    assert stats["truncated"] and stats["nodes"] == 50


class Tripwire:
    """Every attribute access through the instance is recorded."""

    touched: List[str] = []

    def __getattribute__(self, name: str) -> Any:
        Tripwire.touched.append(name)
        return object.__getattribute__(self, name)

    def __getattr__(self, name: str) -> Any:
        Tripwire.touched.append(name)
        raise AttributeError(name)


class Meta(type):
    @property
    def __module__(cls) -> str:  # type: ignore[override]
        Tripwire.touched.append("metaclass")
        return "nope"


class Odd(metaclass=Meta):
    pass


def test_census_and_holders_run_no_target_code() -> None:
    # GIVEN objects whose attribute access (and whose metaclass) would record being touched,
    # some of them in a growing container held by a module global
    mod = types.ModuleType("tripwire_mod")
    mod.items = [Tripwire() for _ in range(10)] + [Odd() for _ in range(10)]  # type: ignore[attr-defined]
    mod.holder = Tripwire()  # type: ignore[attr-defined]
    sys.modules["tripwire_mod"] = mod
    Tripwire.touched.clear()
    try:
        # WHEN a census runs and holders are looked for
        res = _take()
        roots.search({ident(mod.items)}, time.perf_counter() + FAR)
        holders.find_holders([mod.items], time.perf_counter() + 1.0, set())
        del res
    finally:
        del sys.modules["tripwire_mod"]
    # THEN no attribute was asked of them: type() and type's own descriptors only
    assert Tripwire.touched == []


def test_an_object_kept_by_its_bound_method_in_a_registry_is_named_through_it() -> None:
    # GIVEN jobs whose bound methods are registered in a module's list of callbacks (as
    # ``gc.callbacks.append(self._on_gc)``), kept by nothing else
    class Job:
        def __init__(self) -> None:
            self.rows = [bytes(100) for _ in range(5)]

        def on_event(self, phase: str, info: Dict[str, Any]) -> None:
            pass

    mod = types.ModuleType("registry_demo")
    mod.callbacks = [Job().on_event for _ in range(3)]  # type: ignore[attr-defined]
    sys.modules["registry_demo"] = mod
    try:
        jobs = [cb.__self__ for cb in mod.callbacks]
        found = holders.find_holders(jobs[-1:], time.perf_counter() + FAR, {ident(jobs)})
    finally:
        del sys.modules["registry_demo"]
    # THEN the job is named through the registry and the method's object
    assert found[0]["holder"] == "registry_demo.callbacks[2].__self__", found


def test_a_list_a_partials_function_closes_over_is_named_through_the_partial() -> None:
    import functools

    # GIVEN a trainer whose loss is a functools.partial with a function among its keywords,
    # and that function a closure over a list it appends to
    def make_window() -> Callable[[int], None]:
        feats: List[int] = []

        def window_fn(x: int) -> None:
            feats.append(x)

        return window_fn

    def loss(x: int, window_fn: Callable[[int], None]) -> None:
        window_fn(x)

    class Trainer:
        def __init__(self) -> None:
            self.loss_fn = functools.partial(loss, window_fn=make_window())

    mod: Any = types.ModuleType("partial_demo")
    mod.__file__ = "/srv/project/partial_demo.py"
    mod.trainer = Trainer()
    for i in range(10):
        mod.trainer.loss_fn(i)
    fid = ident(mod.trainer.loss_fn.keywords["window_fn"].__closure__[0].cell_contents)
    sys.modules["partial_demo"] = mod
    try:
        found = roots.search({fid}, time.perf_counter() + FAR)
    finally:
        del sys.modules["partial_demo"]
    # THEN it is named down the partial's keywords and the closure's variable
    assert found[fid]["holder"] == "partial_demo.trainer.loss_fn.keywords['window_fn']:feats"


def test_a_list_of_bound_methods_is_a_list_of_their_objects() -> None:
    from memprobe.bootstrap.memprobe_agent.containertypes import elem_types
    from memprobe.bootstrap.memprobe_agent.typeinfo import type_name

    # GIVEN a registry of callbacks that are bound methods of jobs
    class Job:
        def on_event(self) -> None:
            pass

    callbacks = [Job().on_event for _ in range(3)]
    # THEN its items are the jobs the methods keep, by their type
    assert elem_types(callbacks) == [type_name(Job)]
    assert type_name(Job).endswith(".Job")


def test_holder_paths_from_recognisable_roots() -> None:
    # GIVEN a module global, an attribute of a module-level object, a class attribute
    mod = types.ModuleType("holders_demo")
    mod.__file__ = "/srv/project/holders_demo.py"  # the target's own code, not a library
    trainer = types.SimpleNamespace()
    trainer.actor_losses = [1.0] * 5
    mod.losses = [0] * 5  # type: ignore[attr-defined]
    mod.trainer = trainer  # type: ignore[attr-defined]

    class Registry:
        entries: List[Any] = [None] * 5

    mod.Registry = Registry  # type: ignore[attr-defined]
    sys.modules["holders_demo"] = mod
    history = [0] * 5  # a frame local
    try:
        want = [ident(mod.losses), ident(trainer.actor_losses), ident(history)]
        found = roots.search(set(want), time.perf_counter() + FAR)
        by_class = holders.find_holders([Registry.entries], time.perf_counter() + FAR, set())
        again = holders.resolve(found[want[1]]["path"])
    finally:
        del sys.modules["holders_demo"]
    # THEN each path reads like the code that holds it
    assert found[want[0]]["holder"] == "holders_demo.losses"
    assert found[want[1]]["holder"] == "holders_demo.trainer.actor_losses"
    assert found[want[2]]["holder"] == (
        "test_census.py:test_holder_paths_from_recognisable_roots:history"
    )
    assert by_class[0]["holder"].endswith("Registry.entries")
    # AND a module-rooted path can be followed again without a heap scan
    assert again is trainer.actor_losses
    # AND an attribute's class is said beside the variable's name (``prof.records`` reads
    # ``CallProfiler.records``); a module global or a local has none
    assert found[want[1]]["owners"] == ["SimpleNamespace.actor_losses"]
    assert "owners" not in found[want[0]] and "owners" not in found[want[2]]


def test_each_attribute_on_a_holder_path_is_said_with_its_class() -> None:
    # GIVEN a dashboard object in a user module whose axes (a library's object) keep a list
    class Axes:
        def __init__(self) -> None:
            self._children: List[Any] = [None] * 5

    class TrainingDashboard:
        def __init__(self) -> None:
            self.ax_attn = Axes()

    mod = types.ModuleType("dash_demo")
    mod.__file__ = "/srv/project/dash_demo.py"
    mod.dash = TrainingDashboard()  # type: ignore[attr-defined]
    sys.modules["dash_demo"] = mod
    try:
        target = ident(mod.dash.ax_attn._children)
        found = roots.search({target}, time.perf_counter() + FAR)
    finally:
        del sys.modules["dash_demo"]
    # THEN the path names the variables, and each attribute its class, outermost first
    assert found[target]["holder"] == "dash_demo.dash.ax_attn._children"
    assert [o.rsplit(".", 2)[-2:] for o in found[target]["owners"]] == [
        ["TrainingDashboard", "ax_attn"],
        ["Axes", "_children"],
    ]


def test_a_node_deep_in_a_tree_of_dicts_is_named_from_the_tree_s_holder() -> None:
    # GIVEN a trie of nested dicts on an object of the user's: a node a dozen levels down
    mod: Any = types.ModuleType("trie_demo")
    mod.__file__ = "/srv/project/trie_demo.py"  # the target's own code, not a library
    mod.index = types.SimpleNamespace(_root={})
    for word in ("track order 1234", "track order 1299", "coupon x"):
        node = mod.index._root
        for ch in word:
            node = node.setdefault(ch, {})
    deep = mod.index._root
    for ch in "track order 12":
        deep = deep[ch]
    deep_id = ident(deep)
    del deep, node  # no local of this test's frame names it
    # (and a list as deep below a chain of objects: not a tree of dicts, not walked so deep)
    chain: Any = types.SimpleNamespace()
    mod.chain, tail = chain, chain
    for _ in range(12):
        tail.next = types.SimpleNamespace()
        tail = tail.next
    tail.items = [1, 2, 3]
    items_id = ident(tail.items)
    del tail
    sys.modules["trie_demo"] = mod
    try:
        found = roots.search({deep_id, items_id}, time.perf_counter() + FAR)
    finally:
        del sys.modules["trie_demo"]
    # THEN the node is named down the tree from its holder
    path = "".join(f"[{ch!r}]" for ch in "track order 12")
    assert found[deep_id]["holder"] == f"trie_demo.index._root{path}"
    assert items_id not in found


def test_a_list_in_a_worker_threads_threading_local_is_named_by_its_attribute() -> None:
    import threading

    # GIVEN a tracer whose spans live in a threading.local: each pool thread has its own list
    mod: Any = types.ModuleType("tls_demo")
    mod.__file__ = "/srv/project/tls_demo.py"  # the target's own code, not a library
    mod.tracer = types.SimpleNamespace(_local=threading.local())
    made, done = threading.Barrier(3), threading.Event()
    ids: List[int] = []

    def worker() -> None:
        mod.tracer._local.spans = [{"t0": 0.0}] * 5
        ids.append(ident(mod.tracer._local.spans))
        made.wait()
        done.wait()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    made.wait()
    sys.modules["tls_demo"] = mod
    try:
        # WHEN the holder search runs in another thread (as the agent's does)
        found = roots.search(set(ids), time.perf_counter() + FAR)
        again = {ident(holders.resolve(found[i]["path"])) for i in ids}
    finally:
        del sys.modules["tls_demo"]
        done.set()
        for t in threads:
            t.join()
    # THEN both threads' lists are named as the code reads them
    assert [found[i]["holder"] for i in ids] == ["tls_demo.tracer._local.spans"] * 2
    # AND each is found again by its path between censuses, each thread's own
    assert again == set(ids)


def test_the_registry_of_weakref_finalize_is_named() -> None:
    import weakref

    class Staging:
        def release(self) -> None:
            pass

    # GIVEN objects registered with weakref.finalize through their own bound method (which
    # keeps each alive in the registry a class of the standard library holds)
    kept = [Staging() for _ in range(3)]
    finalizers = [weakref.finalize(obj, obj.release) for obj in kept]
    registry = ident(vars(weakref.finalize)["_registry"])  # (no local of this test names it)
    try:
        found = roots.search({registry}, time.perf_counter() + FAR)
        # THEN it is named where a person would look it up, and found again by that path
        assert found[registry]["holder"] == "weakref.finalize._registry"
        assert ident(holders.resolve(found[registry]["path"])) == registry
    finally:
        for f in finalizers:
            f.detach()


def test_the_logging_manager_s_dict_of_loggers_is_named_as_logging_knows_it() -> None:
    import logging

    # GIVEN a logger per session, each kept by the session a user's module holds (so a
    # path from the user's roots reaches the manager's dict too, through any logger)
    mod: Any = types.ModuleType("session_demo")
    mod.__file__ = "/srv/app/session_demo.py"
    mod.sessions = [{"log": logging.getLogger(f"session_demo.s{i}")} for i in range(3)]
    loggers = ident(logging.Logger.manager.loggerDict)
    sys.modules[mod.__name__] = mod
    try:
        found = roots.search({loggers}, time.perf_counter() + FAR)
        # THEN it is named where a person looks it up, not through a session's logger,
        # and found again by that path
        assert found[loggers]["holder"] == "logging.Logger.manager.loggerDict"
        assert ident(holders.resolve(found[loggers]["path"])) == loggers
        # AND it ranks for a watch slot with the user's own containers (the user's calls
        # fill it), not behind them with a library's globals
        registry = logging.Logger.manager.loggerDict
        rank = slots.rank(found[loggers], registry, (len(registry), 1), False)
        assert rank[0] == slots.USER
    finally:
        del sys.modules[mod.__name__]


Polled = Tuple[Dict[str, float], List[Dict[str, Any]], Dict[str, float]]


def _census_grow_poll(
    mod: types.ModuleType, grow: Callable[[], None], then: Callable[[], None]
) -> Polled:
    """``mod`` registered as a module; a census, ``grow()``, a second census 40 steps later,
    ``then()``, a poll: (the second census' values, its entries, what the poll read)."""
    sys.modules[mod.__name__] = mod
    try:
        tracker = containers.ContainerTracker()
        first = _take()
        tracker.update(first["containers"], first["lengths"], 1, time.perf_counter() + FAR, set())
        del first
        grow()
        second = _take()
        v, entries = tracker.update(
            second["containers"], second["lengths"], 41, time.perf_counter() + FAR, set()
        )
        del second
        then()
        return v, entries, tracker.poll()
    finally:
        del sys.modules[mod.__name__]


def test_tracker_names_a_growing_container_and_polls_it() -> None:
    # (the lists are reached through the module only: a local would be a holder of its own)
    mod: Any = types.ModuleType("tracker_demo")
    mod.events = [{"i": i} for i in range(5)]
    mod.values = [0.5] * 5

    def grow() -> None:
        mod.events.extend({"i": i} for i in range(40))
        mod.values.extend([0.5] * 40)

    # GIVEN a first census, then both lists grow
    v, entries, polled = _census_grow_poll(mod, grow, lambda: mod.events.append({"i": -1}))
    # THEN the list of dicts is a signal with its holder and element type...
    assert v["container:tracker_demo.events:len"] == 45
    entry = next(e for e in entries if e["holder"] == "tracker_demo.events")
    assert entry["grew"] == 40 and entry["elem_types"] == ["dict"]
    assert polled["container:tracker_demo.events:len"] == 46
    # ...while the list of plain floats is reported but makes no signal (a few bytes a step)
    floats = next(e for e in entries if e["holder"] == "tracker_demo.values")
    assert floats["scalar"] is True
    assert "container:tracker_demo.values:len" not in v


def test_a_list_of_numpy_scalars_is_plain_numbers() -> None:
    np = pytest.importorskip("numpy")
    mod: Any = types.ModuleType("numpy_log_demo")
    # what a NumPy reduction returns is a NumPy scalar, not a float: a pressure trace of a
    # simulation (wild_p/ok_lj_compression_neighbors) is a log of numbers all the same
    mod.press = [np.float64(0.5)] * 5

    def grow() -> None:
        mod.press.extend(np.float64(i) for i in range(40))

    # GIVEN a first census, then the list gains 40 NumPy floats
    v, entries, _ = _census_grow_poll(mod, grow, lambda: mod.press.append(np.float64(1)))
    # THEN it is reported as plain numbers, making no signal of its own
    entry = next(e for e in entries if e["holder"] == "numpy_log_demo.press")
    assert entry["scalar"] is True and entry["elem_types"] == ["numpy.float64"]
    assert "container:numpy_log_demo.press:len" not in v


def test_a_list_of_records_of_a_few_numbers_is_plain_numbers() -> None:
    mod: Any = types.ModuleType("record_log_demo")
    # a simulation's daily log of (incidence, infected) pairs (wild_q/ok_epidemic_events),
    # a history of (step, loss, lr): as much a log of numbers as a list of floats is
    mod.daily = [(0.5, 3)] * 5
    mod.rows = [(1, "warm-up")] * 5  # a record with text in it is not

    def grow() -> None:
        mod.daily.extend((i * 0.1, i) for i in range(40))
        mod.rows.extend((i, f"step {i}") for i in range(40))

    # GIVEN a first census, then each list gains 40 records
    v, entries, _ = _census_grow_poll(mod, grow, lambda: mod.daily.append((1.0, 2)))
    by_holder = {e["holder"]: e for e in entries}
    # THEN the records of numbers are reported as plain numbers, making no signal of their own
    daily = by_holder["record_log_demo.daily"]
    assert daily["scalar"] is True and daily["elem_types"] == ["tuple of numbers"]
    assert "container:record_log_demo.daily:len" not in v
    # AND the records with text still make one
    assert by_holder["record_log_demo.rows"]["elem_types"] == ["tuple"]
    assert v["container:record_log_demo.rows:len"] == 45


def test_a_dict_inside_a_torch_module_tree_is_named_as_the_code_reads_it() -> None:
    torch = pytest.importorskip("torch")
    mod: Any = types.ModuleType("module_tree_demo")
    mod.__file__ = "/srv/project/module_tree_demo.py"  # a module of the user's
    # a pruning round that registers one more parametrization on a layer each time
    # (wild_r/leak_prune_masks): the layer's parametrization list keeps every mask module
    mod.model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
    mod.model[0].masks = torch.nn.ModuleList()  # reached through the module only

    def grow() -> None:
        for _ in range(40):
            mod.model[0].masks.append(torch.nn.Identity())

    # GIVEN a first census, then the list's module dict gains 40 modules
    v, _, polled = _census_grow_poll(
        mod, grow, lambda: mod.model[0].masks.append(torch.nn.Identity())
    )
    # THEN it is named through the submodules' names (model[0] is the attribute '0'), not
    # through the registries torch keeps them in, and read again by that path
    holder = "module_tree_demo.model.0.masks._modules"
    assert v[f"container:{holder}:len"] == 40
    assert polled[f"container:{holder}:len"] == 41


def test_a_dict_of_flags_keyed_by_messages_is_a_signal() -> None:
    mod: Any = types.ModuleType("registry_demo")
    # a registry like the one ``warnings`` keeps per module: every distinct message a key,
    # True its value (a dict of plain numbers both ways is not even tracked by gc)
    mod.seen = {(f"reading {i} rejected", UserWarning, 7): True for i in range(5)}

    def grow() -> None:
        mod.seen.update({(f"reading {i} rejected", UserWarning, 7): True for i in range(5, 45)})

    def then() -> None:
        mod.seen[("one more", UserWarning, 7)] = True

    # GIVEN a first census, then the registry gains 40 entries
    v, entries, polled = _census_grow_poll(mod, grow, then)
    # THEN the dict keyed by text is a signal and is polled, though its values are plain flags
    entry = next(e for e in entries if e["holder"] == "registry_demo.seen")
    assert entry["scalar"] is False and entry["elem_types"] == ["bool"]
    assert v["container:registry_demo.seen:len"] == 45
    assert polled["container:registry_demo.seen:len"] == 46


def test_a_slow_list_gets_a_slot_beside_a_new_objects_fresh_dicts() -> None:
    # GIVEN a module that keeps one record per fold (a slow list) and builds a new model and
    # optimizer each fold: each time three fresh dicts, longer than what the list gained
    mod = types.ModuleType("folds_demo")
    mod.__file__ = "/srv/project/folds_demo.py"
    mod.fold_results = [{"fold": 0}]  # type: ignore[attr-defined]

    class Opt:
        def __init__(self) -> None:
            self.state = {f"p{i}": i for i in range(30)}
            self.defaults = {f"k{i}": i for i in range(20)}
            self.modules = {f"m{i}": i for i in range(15)}

    sys.modules["folds_demo"] = mod
    old = []  # the replaced optimizers stay alive here: no new dict reuses an old one's id
    try:
        tracker = containers.ContainerTracker()
        entries: List[Dict[str, Any]] = []
        for fold in range(4):
            old.append(getattr(mod, "optimizer", None))
            # WHEN each census sees a whole new optimizer, and by the third the list has
            # five records (new to the tracker: it was too short before)
            mod.optimizer = Opt()  # type: ignore[attr-defined]
            if fold == 2:
                mod.fold_results.extend({"fold": f} for f in range(1, 5))
            census_now = _take()
            _, entries = tracker.update(
                census_now["containers"],
                census_now["lengths"],
                fold * 100 + 5,
                time.perf_counter() + FAR,
                set(),
            )
            del census_now
    finally:
        del sys.modules["folds_demo"]
    # THEN the list is watched (the optimizer's paths are followed already, one slot each)
    holders = [e["holder"] for e in entries]
    assert "folds_demo.fold_results" in holders, holders
    assert holders.count("folds_demo.optimizer.state") <= 1, holders


def test_elem_types_reads_only_types() -> None:
    assert containertypes.elem_types(collections.deque([1, "a", Widget()])) == [
        "int",
        "str",
        f"{__name__}.Widget",
    ]
    assert containertypes.elem_types({"a": 1.0}) == ["float"]


def test_budget_keeps_the_long_run_share_under_the_ceiling() -> None:
    from memprobe.bootstrap.memprobe_agent.budget import Budget

    # GIVEN a 3 % budget and a collector that costs 0.1 s each time, on a fake clock
    budget = Budget(0.03, t0=0.0)
    now, runs = 0.0, 0
    while now < 600.0:
        if budget.allows(now, 0.1):
            budget.charge("census", 0.1, now)
            runs += 1
        now += 0.05
    # THEN it ran, and spent at most 3 % early and about a quarter of that later on
    assert runs > 10
    assert budget.total() <= 0.03 * 20.0 + 0.03 * 0.25 * 580.0 + 0.2
    assert budget.total() / 600.0 < 0.012


def test_forced_runs_leave_at_most_one_run_of_debt() -> None:
    from memprobe.bootstrap.memprobe_agent.budget import Budget

    # GIVEN three censuses of 0.2 s forced on no credit in the first two seconds (a program
    # without steps, looked at while it builds its model)
    budget = Budget(0.03, t0=0.0)
    for t in (1.0, 1.5, 2.5):
        budget.charge("census", 0.2, t)
    # THEN the next one is due once one run's debt and its own cost are earned back
    # (≈ 13 s at 3 %), not after all three runs' debt (≈ 27 s): a 15 s loop gets a look
    due = budget.next_after(2.7, 0.2)
    assert due - 2.7 <= 2 * 0.2 / 0.03 + 0.1
    # AND the long-run ceiling still holds for collectors that wait for credit (test above)


class FakeAgent:
    def __init__(self, **config: Any) -> None:
        self.config = {"run_dir": None, "overhead_budget": 0.03, "tracemalloc": "off", **config}
        self.t0 = time.monotonic()
        self.steps = 0
        self.messages: List[Dict[str, Any]] = []
        self.live = cheap.LiveCounts()
        self.rss = cheap.RssReader()
        self.interrupts = Interrupts()

    def emit(self, message: Dict[str, Any]) -> None:
        self.messages.append(message)

    def pace(self, interval: float, now: float) -> float:
        return interval  # the real agent halves it in the first seconds of stepping

    def event(self, kind: str, message: str) -> None:
        self.messages.append({"k": "event", "kind": kind, "message": message})


def test_censuses_at_fixed_steps_then_on_the_budget() -> None:
    from memprobe.bootstrap.memprobe_agent.expensive import Expensive

    # GIVEN the agent's scheduler driven step by step
    agent = FakeAgent()
    exp = Expensive(agent)
    for step in range(1, 40):
        agent.steps = step
        now = time.monotonic()
        if now >= exp.next_due:
            exp.on_step(step, now)
    censuses = [m for m in agent.messages if m["k"] == "census"]
    # THEN the first two censuses land at steps 5 and 25 whatever the budget says,
    # and each carries the payload the analysis joins (v signals + details)
    assert [c["step"] for c in censuses][:2] == [5, 25]
    last = censuses[-1]
    for key in (
        "tensors:count",
        "graph:nodes",
        "graph:roots",
        "graph:largest",
        "modules:count",
        "modules:param_bytes",
    ):
        assert key in last["v"]
    for key in ("types", "growing_types", "containers", "graphs", "duration_s", "budget"):
        assert key in last


def test_looks_before_the_first_step_count_against_the_fixed_step_looks() -> None:
    from memprobe.bootstrap.memprobe_agent.expensive import Expensive

    def fixed_step_looks(cost: float, pre_step_censuses: int) -> List[int]:
        # GIVEN a heap where a census costs ``cost`` s of CPU, and the looks taken on the
        # budget before the first step (a framework setting up; torch importing)
        agent = FakeAgent()
        exp = Expensive(agent)
        taken: List[int] = []

        def census(step: Any, now: float, tm_result: Any) -> None:
            taken.append(step)
            exp.census_cpu_s += cost
            exp.budget.charge("census", cost, now)

        exp._census = census  # type: ignore[method-assign]
        exp.census_cpu_s = exp.prestep_cpu_s = cost * pre_step_censuses
        # WHEN it steps 500 times
        for step in range(1, 500):
            agent.steps = step
            now = time.monotonic()
            if now >= exp.next_due:
                exp.on_step(step, now)
        return [s for s in taken if s in (5, 25, 100, 400)]

    # THEN with nothing looked at before, the looks at 100 and 400 come while all cost
    # under FORCED_MAX_S; after a framework's two looks of 0.3 s during its set-up, only
    # the two always taken
    assert fixed_step_looks(0.3, 0) == [5, 25, 100, 400]
    assert fixed_step_looks(0.3, 2) == [5, 25]
    # AND five looks of 0.17 s taken while torch imported on a loaded machine weigh no more
    # than PRESTEP_MAX_S: an ordinary script's loop (0.1 s a look) still gets all four
    assert fixed_step_looks(0.1, 0) == [5, 25, 100, 400]
    assert fixed_step_looks(0.17, 5)[:3] == [5, 25, 100]


class _Monitor:
    def __init__(self, window: Any) -> None:
        self.window = window


def _censuses_growing(grow: Callable[[int], None]) -> Tuple[Any, Dict[str, Any]]:
    """An agent's censuses at steps 5, 25 and 45, ``grow(40)`` between them: the census
    taker and the last census' message."""
    from memprobe.bootstrap.memprobe_agent.expensive import Expensive

    exp = Expensive(FakeAgent())
    exp._census(5, time.monotonic(), None)
    grow(40)
    exp._census(25, time.monotonic(), None)
    grow(40)
    exp._census(45, time.monotonic(), None)
    return exp, [m for m in exp.agent.messages if m["k"] == "census"][-1]


def test_an_array_a_loop_grows_by_concatenation_is_watched_by_its_holder() -> None:
    import gc
    import weakref

    import numpy as np

    # GIVEN a monitor whose window array is rebuilt longer every step (an ndarray is no gc
    # object: no census lists it, and every step makes a new one)
    mod: Any = types.ModuleType("window_demo")
    mod.__file__ = "/srv/app/window_demo.py"  # a module of the user's, not a library's
    mod.monitor = _Monitor(np.zeros((16, 1 << 15), dtype=np.float32))  # 2 MiB
    # beside it, the filled part of a preallocated ring: a view, growing as the ring fills
    ring = np.zeros((16, 1 << 17), dtype=np.float32)
    mod.filled = ring[:, : 1 << 15]
    sys.modules[mod.__name__] = mod

    def grow(blocks: int) -> None:
        for _ in range(blocks):
            block = np.ones((16, 256), dtype=np.float32)
            mod.monitor.window = np.concatenate([mod.monitor.window, block], axis=1)
        mod.filled = ring[:, : mod.filled.shape[1] + 256 * blocks]

    try:
        exp, census = _censuses_growing(grow)
        # THEN it is watched under its holder, its length its element count, its bytes
        # its buffer's
        holder = "window_demo.monitor.window"
        size = mod.monitor.window.size
        assert census["v"][f"container:{holder}:len"] == size
        entry = next(e for e in census["containers"] if e["holder"] == holder)
        assert entry["type"] == "numpy.ndarray" and entry["elem_types"] == ["float32"]
        # (its growth counted from its length at the census before: 40 blocks a census)
        assert entry["first_len"] == size - 40 * 16 * 256
        assert entry["bytes"] >= mod.monitor.window.nbytes
        # (the ring's view holds nothing of its own: not watched)
        assert not any(e["holder"] == "window_demo.filled" for e in census["containers"])
        # AND it is read again between censuses by its path, the new array each time
        grow(1)
        assert exp.tracker.poll()[f"container:{holder}:len"] == size + 16 * 256
        # AND nothing keeps an array the program let go
        gone = weakref.ref(mod.monitor.window)
        mod.monitor.window = np.zeros((16, 8), dtype=np.float32)
        exp._census(65, time.monotonic(), None)
        gc.collect()
        assert gone() is None
    finally:
        del sys.modules[mod.__name__]


def test_a_tensor_a_loop_grows_by_torch_cat_is_watched_by_its_holder() -> None:
    import gc
    import weakref

    torch = pytest.importorskip("torch")

    # GIVEN a drift monitor whose bank is rebuilt longer every window (a new tensor each time:
    # no identity to follow), beside a preallocated ring's filled part (a view) and a big
    # model weight (a Parameter)
    mod: Any = types.ModuleType("bank_demo")
    mod.__file__ = "/srv/app/bank_demo.py"  # a module of the user's, not a library's
    mod.monitor = _Monitor(torch.zeros(1 << 13, 64))  # 2 MiB
    ring = torch.zeros(1 << 15, 64)
    mod.filled = ring[: 1 << 13]
    mod.weight = torch.nn.Parameter(torch.zeros(1 << 14, 64))
    sys.modules[mod.__name__] = mod

    def grow(blocks: int) -> None:
        for _ in range(blocks):
            mod.monitor.window = torch.cat([mod.monitor.window, torch.ones(256, 64)])
        mod.filled = ring[: mod.filled.shape[0] + 256 * blocks]
        mod.weight = torch.nn.Parameter(torch.zeros(mod.weight.shape[0] + 256 * blocks, 64))

    try:
        exp, census = _censuses_growing(grow)
        # THEN it is watched under its holder, its length its element count
        holder = "bank_demo.monitor.window"
        size = mod.monitor.window.nelement()
        assert census["v"][f"container:{holder}:len"] == size
        entry = next(e for e in census["containers"] if e["holder"] == holder)
        assert entry["type"] == "torch.Tensor" and entry["elem_types"] == ["torch.float32"]
        assert entry["bytes"] >= size * 4
        # (the ring's view and the model's weight are not watched)
        watched = {e["holder"] for e in census["containers"]}
        assert not watched & {"bank_demo.filled", "bank_demo.weight"}
        # AND it is read again between censuses by its path, the new tensor each time
        grow(1)
        assert exp.tracker.poll()[f"container:{holder}:len"] == size + 256 * 64
        # AND nothing keeps a tensor the program let go
        gone = weakref.ref(mod.monitor.window)
        mod.monitor.window = torch.zeros(8, 64)
        exp._census(65, time.monotonic(), None)
        gc.collect()
        assert gone() is None
    finally:
        del sys.modules[mod.__name__]


def test_a_sparse_tensor_summed_uncoalesced_is_counted_and_watched_by_its_entries() -> None:
    torch = pytest.importorskip("torch")

    # GIVEN an accumulator of squared sparse gradients over a (50,000 x 16) table, summed
    # without coalescing: each sum only concatenates the entries (a Fisher estimate,
    # wild_q/leak_sparse_fisher); its shape never changes, its entries grow
    rows = 50_000
    mod: Any = types.ModuleType("fisher_demo")
    mod.__file__ = "/srv/app/fisher_demo.py"  # a module of the user's, not a library's
    empty = torch.empty(1, 0, dtype=torch.long)
    mod.tracker = _Monitor(
        torch.sparse_coo_tensor(empty, torch.empty(0, 16), (rows, 16), check_invariants=True)
    )
    sys.modules[mod.__name__] = mod

    done = [0]

    def grow(updates: int) -> None:
        for i in range(done[0], done[0] + updates):
            idx = torch.arange(i * 1024, i * 1024 + 1024) % rows
            idx = torch.cat([idx, idx])  # a gradient's rows as they come: repeated
            g = torch.sparse_coo_tensor(
                idx[None, :], torch.ones(2048, 16), (rows, 16), check_invariants=True
            )
            mod.tracker.window = mod.tracker.window + g * g
        done[0] += updates

    try:
        grow(16)  # over 1 MiB of entries at the first census
        exp, census = _censuses_growing(grow)
        fisher = mod.tracker.window
        entries = fisher._nnz()
        # THEN its indices' and values' bytes are in the tensors' bytes (its shape's 3 MiB
        # are not what it takes)
        assert census["v"]["tensors:cpu_bytes"] >= entries * (16 * 4 + 8)
        # AND it is watched under its holder, its length its entries
        holder = "fisher_demo.tracker.window"
        assert census["v"][f"container:{holder}:len"] == entries > 96 * 1024
    finally:
        del sys.modules[mod.__name__]


def test_a_tee_branch_read_behind_the_other_is_watched_by_its_backlog() -> None:
    import gc
    import itertools
    import weakref

    # GIVEN a stream split by itertools.tee: training reads one branch, an audit the other
    # only at the end, so the audit branch keeps every batch (no container lists them)
    mod: Any = types.ModuleType("tee_demo")
    mod.__file__ = "/srv/app/tee_demo.py"  # a module of the user's, not a library's
    stream = ({"x": i} for i in range(10**6))
    mod.train, mod.audit = itertools.tee(stream)
    for _ in range(600):  # already behind at the first census
        next(mod.train)
    for _ in range(10):  # (the audit branch has read a little of its first link)
        next(mod.audit)

    def grow(steps: int) -> None:
        for _ in range(steps * 20):
            next(mod.train)

    sys.modules[mod.__name__] = mod
    try:
        exp, census = _censuses_growing(grow)
        # THEN the late branch is watched under its holder, its length its backlog in items
        # (exact where Python tells what a branch read of its first link; else to 57 more),
        # its items' type the batches'
        holder = "tee_demo.audit"
        backlog = census["v"][f"container:{holder}:len"]
        assert backlog == 2190 if sys.version_info < (3, 12) else 2190 <= backlog <= 2200
        entry = next(e for e in census["containers"] if e["holder"] == holder)
        # (its growth counted from its backlog at the census before the one that first
        # watched it: the second census, two censuses in a row, took it)
        assert entry["first_len"] == backlog - 2 * 40 * 20
        assert entry["type"] == "itertools._tee" and entry["elem_types"] == ["dict"]
        # (the branch in front keeps nothing: not watched)
        assert not any(e["holder"] == "tee_demo.train" for e in census["containers"])
        # AND it is read again between censuses, by its path
        grow(10)
        assert exp.tracker.poll()[f"container:{holder}:len"] == backlog + 200
        # AND nothing keeps a branch the program let go
        gone = weakref.ref(mod.audit)
        mod.audit = None
        exp._census(65, time.monotonic(), None)
        gc.collect()
        assert gone() is None
    finally:
        del sys.modules[mod.__name__]


def test_a_functions_temporary_array_seen_now_and_then_is_not_watched() -> None:
    import numpy as np

    tracker = containers.ContainerTracker()

    def arrays(mib: int) -> List[Tuple[str, Any]]:
        return [("bo.py:expected_improvement:K", np.zeros(mib << 18, dtype=np.float32))]

    # GIVEN a temporary that grows with the work, seen only when a census lands in its function
    looked = [tracker.arrays.grown(arrays(m) if m else []) for m in (1, 3, 0, 5, 7, 0, 9)]
    # THEN it is never a candidate: never three censuses in a row
    assert all(not grown for grown in looked)
    # AND one seen at every census, grown by a MiB or more since first seen, is
    tracker = containers.ContainerTracker()
    looked = [tracker.arrays.grown(arrays(m)) for m in (9, 10, 11, 11)]
    assert [len(g) for g in looked] == [0, 0, 1, 0]


def test_a_census_on_a_huge_heap_is_bounded_and_says_so() -> None:
    from memprobe.bootstrap.memprobe_agent.expensive import Expensive

    agent = FakeAgent(census_max_objects=100_000)
    exp = Expensive(agent)
    heap: List[List[Any]] = [[] for _ in range(400_000)]
    exp.on_step(5, time.monotonic())
    census_msg = next(m for m in agent.messages if m["k"] == "census")
    assert census_msg["stride"] >= 4
    assert any(m.get("kind") == "census_sampled" for m in agent.messages)
    del heap


def test_no_census_in_a_forked_child() -> None:
    from memprobe.bootstrap.memprobe_agent.expensive import Expensive

    # GIVEN the agent of a process forked from its parent (a DataLoader worker)
    agent = FakeAgent()
    agent.ident = types.SimpleNamespace(forked_from=1234)  # type: ignore[attr-defined]
    exp = Expensive(agent)
    # THEN it never walks the heap it shares with its parent, and says why
    assert exp.next_due == float("inf")
    exp.on_step(5, time.monotonic())
    assert not [m for m in agent.messages if m["k"] == "census"]
    assert [m["kind"] for m in agent.messages] == ["census_off"]


def test_a_list_of_graph_holding_tensors_counts_its_graphs() -> None:
    mod = types.ModuleType("graphs_demo")
    lin = torch.nn.Linear(3, 1)
    mod.losses = [lin(torch.randn(2, 3)).sum() for _ in range(4)]  # type: ignore[attr-defined]
    sys.modules["graphs_demo"] = mod
    try:
        tracker = containers.ContainerTracker()
        first = _take()
        tracker.update(first["containers"], first["lengths"], 1, time.perf_counter() + FAR, set())
        del first
        # GIVEN loss tensors appended with their graphs (and one detached)
        mod.losses.extend(lin(torch.randn(2, 3)).sum() for _ in range(10))
        mod.losses.append(torch.zeros(()))
        second = _take()
        v, _ = tracker.update(
            second["containers"], second["lengths"], 11, time.perf_counter() + FAR, set()
        )
        del second
        mod.losses.append(lin(torch.randn(2, 3)).sum())
        polled = tracker.poll()
    finally:
        del sys.modules["graphs_demo"]
    # THEN the items holding a graph are a signal of their own, kept up to date by the poll
    assert v.get("graph:held_by:graphs_demo.losses") == 14, v
    assert polled["graph:held_by:graphs_demo.losses"] == 15
    assert polled["container:graphs_demo.losses:len"] == 16


def test_holders_inside_an_lru_cache_and_a_tensors_hooks() -> None:
    # GIVEN an unbounded lru_cache and a parameter's hook dict, each held from a module
    import functools

    mod = types.ModuleType("cachehooks_demo")
    mod.__file__ = "/srv/project/cachehooks_demo.py"

    @functools.lru_cache(maxsize=None)  # noqa: UP033 - the shape users write
    def table(t: float) -> Any:
        return torch.zeros(4) + t

    for i in range(5):
        table(float(i))
    weight = torch.nn.Parameter(torch.zeros(3))
    for _ in range(5):
        weight.register_hook(lambda g: g)
    mod.table = table  # type: ignore[attr-defined]
    mod.weight = weight  # type: ignore[attr-defined]
    sys.modules["cachehooks_demo"] = mod
    try:
        cache = lrucache.lru_cache_dict(table)
        hooks = dict(holders.c_fields(weight))["_backward_hooks"]
        # WHEN they are looked for from the roots, by referrers, and followed again
        found = roots.search({ident(cache), ident(hooks)}, time.perf_counter() + FAR)
        up = holders.find_holders([cache, hooks], time.perf_counter() + FAR, set())
        again = [holders.resolve(found[ident(x)]["path"]) for x in (cache, hooks)]
    finally:
        del sys.modules["cachehooks_demo"]
    # THEN both are named as a person reads them, and their paths lead back to them
    assert len(cache) == 5 and len(hooks) == 5
    assert found[ident(cache)]["holder"] == "cachehooks_demo.table.<lru_cache>"
    assert found[ident(hooks)]["holder"] == "cachehooks_demo.weight._backward_hooks"
    assert again[0] is cache and again[1] is hooks
    assert up[0]["holder"].endswith("table.<lru_cache>")
    assert up[1]["holder"].endswith("weight._backward_hooks")


def _with_untracked(res: Dict[str, Any]) -> Dict[str, Any]:
    """A census with the untracked containers the roots lead to, as the agent takes it."""
    for obj in roots.untracked_containers(4, time.perf_counter() + FAR):
        res["containers"][ident(obj)] = obj
        res["lengths"][ident(obj)] = len(obj)
    return res


def test_an_lru_caches_bound_is_its_maxsize_and_only_the_cache_has_it() -> None:
    # GIVEN a bounded lru_cache (its cache a dict gc does not track: ints to links), an
    # unbounded one and result lists inside the bounded one, filling between two censuses,
    # all held from a module
    import functools

    mod = types.ModuleType("lrubound_demo")
    mod.__file__ = "/srv/project/lrubound_demo.py"

    @functools.lru_cache(maxsize=300)
    def bounded(i: int) -> List[Any]:
        return [object() for _ in range(6 + i)]

    @functools.cache
    def unbounded(i: int) -> Dict[str, int]:
        return {"i": i}

    for i in range(5):
        bounded(i), unbounded(i)
    mod.bounded, mod.unbounded = bounded, unbounded  # type: ignore[attr-defined]
    del bounded, unbounded  # held from the module only
    sys.modules["lrubound_demo"] = mod
    try:
        tracker = containers.ContainerTracker()
        first = _with_untracked(_take())
        tracker.update(first["containers"], first["lengths"], 1, time.perf_counter() + FAR, set())
        del first
        for i in range(5, 60):
            mod.bounded(i), mod.unbounded(i)
        second = _with_untracked(_take())
        v, entries = tracker.update(
            second["containers"], second["lengths"], 60, time.perf_counter() + FAR, set()
        )
        del second
        polled = tracker.poll()
    finally:
        del sys.modules["lrubound_demo"]
    by_holder = {e["holder"]: e for e in entries if e["type"] == "dict"}
    # THEN the bounded cache carries its maxsize as its bound, like a deque(maxlen=N), and
    # makes no length series of its own (it fills, then evicts)
    cache = by_holder["lrubound_demo.bounded.<lru_cache>"]
    assert cache["maxlen"] == 300 and cache["len"] == 60
    assert "container:lrubound_demo.bounded.<lru_cache>:len" not in v
    assert "container:lrubound_demo.bounded.<lru_cache>:len" not in polled
    # AND the unbounded one (functools.cache) has none: it is judged like any dict
    free = by_holder["lrubound_demo.unbounded.<lru_cache>"]
    assert free["maxlen"] is None
    assert v["container:lrubound_demo.unbounded.<lru_cache>:len"] == 60
    # AND a list the bounded cache holds as a result is not bounded by the cache's maxsize
    assert all(e["maxlen"] is None for e in entries if e["type"] == "list")


def _grew_at(state: Any, step: int, entries: List[Dict[str, Any]]) -> Dict[str, bool]:
    return expensive.Expensive._grew(state, {}, entries, step)


def test_a_tracemalloc_window_only_for_heavy_growth_sustained_over_two_censuses() -> None:
    # GIVEN the auto mode's bookkeeping, and censuses 1,000 steps apart that see three
    # containers gain 300 items each: a bounded deque (rich's progress samples), an unbounded
    # list of small dicts (a Trainer's log_history: 100 B a step) and an unbounded list
    # whose items' bytes grow by 3 KB a step
    state = types.SimpleNamespace(prev_v={}, box_bytes={}, grew_before={})

    def census(step: int) -> Dict[str, bool]:
        entries = [
            {"holder": "progress._progress", "grew": 300, "maxlen": 1000, "bytes": 1e5},
            {"holder": "trainer.state.log_history", "grew": 300, "bytes": 100.0 * step},
            {"holder": "main:losses", "grew": 300, "bytes": 3000.0 * step},
        ]
        grew = _grew_at(state, step, entries)
        suspicious = expensive.Expensive._suspicious(state, grew)  # type: ignore[arg-type]
        state.grew_before = grew
        return {"suspicious": suspicious, **grew}

    first, second = census(1000), census(2000)
    # THEN the deque never counts, the small dicts never open a window, and the heavy list
    # opens one once it has grown at two censuses in a row, by bytes that count
    assert "box:progress._progress" not in second
    assert second["box:trainer.state.log_history"] is False
    assert first["suspicious"] is False and second["suspicious"] is True


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="f_locals is a proxy (PEP 667)")
def test_reading_a_training_mains_locals_keeps_nothing_alive() -> None:
    # GIVEN a main() that calls model.eval() (a method: no read of its own locals) and one
    # that keeps locals() (its own snapshot, which must be left alone)
    from memprobe.bootstrap.memprobe_agent import frames

    model = torch.nn.Linear(2, 2)
    seen: Dict[str, Any] = {}

    def training_main() -> None:
        loss = model(torch.ones(1, 2)).sum()
        model.eval()
        frame = sys._getframe()
        seen["names"] = [k for k, _ in frames.local_items(frame, frames.OWN)]
        # THEN after the read the frame's snapshot holds no reference to the loss
        seen["kept"] = [
            r for r in __import__("gc").get_referrers(loss) if isinstance(r, dict) and "loss" in r
        ]

    def keeps_its_locals() -> None:
        mine = locals()
        value = object()
        frames.local_items(sys._getframe(), frames.OWN)
        seen["mine"] = "value" in mine

    training_main()
    keeps_its_locals()
    assert "loss" in seen["names"]
    assert seen["kept"] == [], seen["kept"]
    # AND a function holding locals() keeps its dict as CPython left it
    assert seen["mine"] is True


def test_a_list_at_the_address_of_one_set_aside_is_still_watched() -> None:
    # GIVEN a nameless start-up list the tracker set aside, then freed: CPython hands its
    # address to the next list made, here the program's own list of eval outputs
    mod = types.ModuleType("reuse_demo")
    sys.modules["reuse_demo"] = mod
    try:
        tracker = containers.ContainerTracker()
        first = _take()
        tracker.update(first["containers"], first["lengths"], 1, time.perf_counter() + FAR, set())
        del first
        junk = [object() for _ in range(10)]
        tracker.ignored[ident(junk)] = len(junk)
        address = ident(junk)
        del junk
        mod.outputs = []  # type: ignore[attr-defined]
        if ident(mod.outputs) != address:
            pytest.skip("this interpreter did not reuse the address")
        # WHEN it grows past what the set-aside one held, census after census
        entries: List[Dict[str, Any]] = []
        for step in (100, 200, 300):
            mod.outputs.extend({"row": i} for i in range(12))
            now = _take()
            _, entries = tracker.update(
                now["containers"], now["lengths"], step, time.perf_counter() + FAR, set()
            )
            del now
    finally:
        del sys.modules["reuse_demo"]
    # THEN it is watched under its name
    assert "reuse_demo.outputs" in [e["holder"] for e in entries]


def test_a_tensor_kept_in_a_small_state_dict_is_named_by_its_key() -> None:
    # GIVEN a training function that accumulates into a dict of running values (a tutorial's
    # `state["running_loss"] += loss`), beside a big dict of tensors it keeps per step
    w = torch.ones(3, requires_grad=True)
    state = {"running_loss": (w * 2).sum(), "n": 3}
    per_step = {i: (w * i).sum() for i in range(40)}

    def holds(value: Any) -> bool:
        return type(value) is torch.Tensor and graphs.holds_graph(value)

    # WHEN the graph-holding tensors the user's roots name are looked for
    found = dict(roots.find_matching(holds, time.perf_counter() + FAR))
    # THEN the running value is named by its key, and the big dict's items are not named
    here = "test_census.py:test_a_tensor_kept_in_a_small_state_dict_is_named_by_its_key"
    named = [h for h, t in found.items() if t is state["running_loss"]]
    assert named and named[0].startswith(f"{here}:state") and "running_loss" in named[0]
    assert not any("per_step[" in holder for holder in found), found
    del per_step


class _Word(str):
    """A str subclass, as numpy's ``str_`` is: an atom, whatever its type's name."""


# a corpus of small lists of words (what ``list(rng.choice(vocab, n))`` gives), and beside
# it the list a census is asked about
CORPUS_DOCS = [[_Word(f"w{i}") for i in range(24)] for _ in range(3000)]
CORPUS_PENDING: List[Dict[str, int]] = [{"step": 1}]


def test_the_walk_from_the_roots_never_queues_atoms(monkeypatch: pytest.MonkeyPatch) -> None:
    from memprobe.bootstrap.memprobe_agent import roots

    # GIVEN a module global holding 72,000 words in 3,000 lists, and a list to name
    looked: List[type] = []
    children = roots._children

    def spy(value: Any) -> Any:
        looked.append(type(value))
        return children(value)

    monkeypatch.setattr(roots, "_children", spy)
    # WHEN the holder of that list is looked for from the user's roots
    found = roots.search({ident(CORPUS_PENDING)}, time.perf_counter() + 5.0)
    # THEN it is named, and no word (not even of a str subclass) was ever looked into:
    # atoms are not queued (each queued child cost a copy of its path: a census a second)
    assert found[ident(CORPUS_PENDING)]["holder"].endswith("CORPUS_PENDING")
    assert _Word not in looked and str not in looked


def test_a_look_on_evidence_when_heavy_objects_pile_up_between_censuses() -> None:
    from memprobe.bootstrap.memprobe_agent import expensive
    from memprobe.bootstrap.memprobe_agent.expensive import Expensive

    # GIVEN the agent's scheduler past its fixed-step looks, whose last census counted
    # 12 modules and 400 tensors
    agent = FakeAgent()
    exp = Expensive(agent)
    exp.forced_left = 0
    exp.prev_v = {"modules:count": 12.0, "tensors:count": 400.0}
    now = time.monotonic()
    exp.last = (now - 10.0, 100)
    # THEN a few more tensors or one more model are no evidence; 4 more models, or 256 and a
    # quarter more tensors, are
    assert not exp.wants_look({"modules:count": 13, "tensors:count": 480}, now)
    assert exp.wants_look({"modules:count": 16, "tensors:count": 400}, now)
    assert exp.wants_look({"modules:count": 12, "tensors:count": 700}, now)
    # BUT not within EVIDENCE_GAP_S of the last census, nor more than EVIDENCE_LOOKS a run
    exp.last = (now - 1.0, 100)
    assert not exp.wants_look({"modules:count": 40}, now)
    exp.last = (now - 10.0, 100)
    exp.evidence_left = 0
    assert not exp.wants_look({"modules:count": 40}, now)
    assert expensive.EVIDENCE_LOOKS >= 1


def test_a_look_on_evidence_when_memory_climbs_while_no_count_moves() -> None:
    from memprobe.bootstrap.memprobe_agent import wire
    from memprobe.bootstrap.memprobe_agent.expensive import Expensive

    # GIVEN the agent's scheduler past its fixed-step looks, after a census: a running sum
    # kept with its graph is one tensor whose chain grows, so no count moves between looks
    agent = FakeAgent()
    exp = Expensive(agent)
    exp.forced_left = 0
    exp._census(100, time.monotonic(), None)
    counts = dict(exp.prev_v)
    base = exp.rss_before
    assert isinstance(base, int) and base > 0  # the RSS the census began at
    now = time.monotonic()
    exp.last = (now - 10.0, 100)
    mib = 1 << 20
    # THEN memory a few MB up is no evidence, nor 64 MiB more on a 1 GiB process
    assert not exp.wants_look({**counts, wire.RSS: base + 16 * mib}, now)
    exp.rss_before = 1 << 30
    assert not exp.wants_look({**counts, wire.RSS: (1 << 30) + 64 * mib}, now)
    # BUT memory up by a tenth and by 32 MiB is: a look at the next step boundary
    assert exp.wants_look({**counts, wire.RSS: (1 << 30) + (1 << 27)}, now)
    exp.rss_before = base
    assert exp.wants_look({**counts, wire.RSS: base + max(32 * mib, -(-base // 10))}, now)
    # AND not before EVIDENCE_GAP_S after the census
    exp.last = (now - 1.0, 100)
    assert not exp.wants_look({**counts, wire.RSS: 4 * base}, now)


def test_memory_that_swings_back_under_its_high_water_mark_asks_for_no_look() -> None:
    from memprobe.bootstrap.memprobe_agent import wire
    from memprobe.bootstrap.memprobe_agent.expensive import Expensive

    # GIVEN a program whose RSS swings by 100 MiB (a batch's copies made and freed), read
    # by the cheap samples before a census that happened to land low
    agent = FakeAgent()
    exp = Expensive(agent)
    exp.forced_left = 0
    mib = 1 << 20
    low = 300 * mib
    exp.wants_look({wire.RSS: low + 100 * mib}, time.monotonic())
    exp._census(100, time.monotonic(), None)
    counts = dict(exp.prev_v)
    now = time.monotonic()
    exp.last = (now - 10.0, 100)
    # THEN the swing back up is no evidence: the mark is the high-water mark, not the reading
    assert exp.rss_before is not None and exp.rss_before >= low + 100 * mib
    assert not exp.wants_look({**counts, wire.RSS: low + 100 * mib}, now)
    # BUT a new high by 32 MiB and a tenth is
    assert exp.wants_look(
        {**counts, wire.RSS: exp.rss_before + max(48 * mib, exp.rss_before // 8)}, now
    )


def test_a_look_on_evidence_in_a_program_without_steps() -> None:
    from memprobe.bootstrap.memprobe_agent.expensive import Expensive

    # GIVEN a program that never steps (an RNN chain built in a plain loop), whose censuses
    # so far came before its tensors piled up: its fixed-step looks are still pending, and
    # will never come
    agent = FakeAgent()
    agent.t0 = time.monotonic() - 30.0
    exp = Expensive(agent)
    assert exp.forced_left > 0
    exp.prev_v = {"tensors:count": 0.0}
    now = time.monotonic()
    exp.last = (now - 10.0, None)  # type: ignore[assignment]
    exp.imports._changed_at = now - 60.0  # imports settled long ago
    piled = {"tensors:count": 1735}
    # THEN the step path keeps waiting for its fixed-step looks, the background thread does
    # not: it looks now, on no credit, one of the run's EVIDENCE_LOOKS
    assert not exp.wants_look(piled, now)
    assert exp.wants_look(piled, now, True)
    left = exp.evidence_left
    exp.look_tick(now)
    censuses = [m for m in agent.messages if m["k"] == "census"]
    assert len(censuses) == 1 and censuses[0]["step"] is None
    assert exp.evidence_left == left - 1
    # AND not again within EVIDENCE_GAP_S of that census
    assert not exp.wants_look({"tensors:count": 9000}, time.monotonic(), True)


def test_open_figures_are_what_pyplot_holds_not_every_live_figure() -> None:
    # GIVEN pyplot (Agg) and a figure drawn, kept in a variable, and closed
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    fig, _ = plt.subplots()
    values: Dict[str, Any] = {}
    cheap.open_figures(values)
    assert values["figures:open"] == 1
    # WHEN it is closed (the object itself still alive)
    plt.close(fig)
    cheap.open_figures(values)
    # THEN pyplot holds none open, though the figure lives on
    assert values["figures:open"] == 0
    assert fig is not None


class _History(list):  # type: ignore[type-arg]
    """A program's list subclass that adds behaviour but reads as a list."""

    def last(self) -> Any:
        return self[-1]


class _Guarded(list):  # type: ignore[type-arg]
    """A list subclass whose length is the program's own code."""

    calls = 0

    def __len__(self) -> int:
        type(self).calls += 1
        return list.__len__(self)


def test_container_subclasses_that_read_as_their_base_are_watched_by_holder() -> None:
    from unittest import mock

    # GIVEN a Counter of tokens, a Mock "spy" that records every call, and a list subclass,
    # all growing under the user's names; beside them a list subclass whose __len__ is
    # the program's own code
    mod: Any = types.ModuleType("subclass_demo")
    mod.__file__ = "/srv/app/subclass_demo.py"  # a module of the user's, not a library's
    mod.vocab = collections.Counter()
    mod.spy = mock.Mock(wraps=lambda batch: batch)
    mod.history = _History()
    mod.guarded = _Guarded()
    sys.modules[mod.__name__] = mod

    def grow(steps: int) -> None:
        for _ in range(steps):
            n = len(mod.history)
            mod.vocab.update({f"tok{n}-{k}": 1 for k in range(3)})
            mod.spy({"x": [0.0] * 8})
            mod.history.append({"step": n})
            list.append(mod.guarded, n)

    grow(5)
    _Guarded.calls = 0
    try:
        _, census = _censuses_growing(grow)
        # THEN each is watched under the name a person knows it by, with its items' type
        entries = {e["holder"]: e for e in census["containers"]}
        assert entries["subclass_demo.vocab"]["type"] == "collections.Counter"
        assert entries["subclass_demo.vocab"]["elem_types"] == ["int"]
        calls = [h for h in entries if h.startswith("subclass_demo.spy.")]
        assert calls and all(entries[h]["type"] == "unittest.mock._CallList" for h in calls)
        assert entries["subclass_demo.history"]["elem_types"] == ["dict"]
        assert census["v"]["container:subclass_demo.history:len"] == len(mod.history)
        # AND the one that reads through the program's code is left alone: never called
        assert "subclass_demo.guarded" not in entries
        assert _Guarded.calls == 0
    finally:
        del sys.modules[mod.__name__]


def test_a_class_the_program_made_and_dropped_is_not_kept_by_the_census() -> None:
    import gc
    import weakref

    # GIVEN a class made at run time (a namedtuple per call, a model class per trial),
    # instances of it under the user's roots while the censuses run
    mod: Any = types.ModuleType("dyn_demo")
    mod.__file__ = "/srv/app/dyn_demo.py"
    mod.Made = collections.namedtuple("Made", "a b")  # type: ignore[misc]
    mod.rows = [mod.Made(i, [i]) for i in range(50)]
    sys.modules[mod.__name__] = mod
    try:
        _censuses_growing(lambda n: mod.rows.extend(mod.Made(i, [i]) for i in range(n)))
        # WHEN the program drops it
        gone = weakref.ref(mod.Made)
        mod.rows = []
        del mod.Made
        gc.collect()
        # THEN nothing of the agent's keeps it alive
        assert gone() is None
    finally:
        del sys.modules[mod.__name__]


def keeper_demo() -> Dict[str, Any]:
    """What the censuses make of one Pickler reused for a whole stream: its memo (a C
    table, no dict or list) keeps every record it wrote, and records pile up with no
    container to show for it."""
    import gc
    import io
    import pickle
    import weakref

    class Writer(pickle.Pickler):  # (a subclass: weakly referable, to see it freed)
        pass

    mod: Any = types.ModuleType("keeper_demo")
    mod.__file__ = "/srv/app/keeper_demo.py"
    mod.writer = types.SimpleNamespace(_pickler=Writer(io.BytesIO(), protocol=5))

    def grow(steps: int) -> None:
        for i in range(steps):
            mod.writer._pickler.dump({"frame": i, "pos": [float(i)] * 4})

    holder = "keeper_demo.writer._pickler"
    sys.modules[mod.__name__] = mod
    try:
        exp, census = _censuses_growing(grow)
        entries = [e for e in census["containers"] if e["holder"] == holder]
        facts: Dict[str, Any] = {
            "entries": entries,
            "len": census["v"].get(f"container:{holder}:len"),
        }
        grow(10)
        facts["polled"] = exp.tracker.poll().get(f"container:{holder}:len")
        gone = weakref.ref(mod.writer._pickler)
        mod.writer._pickler = None
        exp._census(65, time.monotonic(), None)
        gc.collect()
        facts["freed"] = gone() is None
        return facts
    finally:
        del sys.modules[mod.__name__]


def test_what_keeps_a_growing_type_with_no_container_is_watched_by_holder() -> None:
    import json
    import subprocess

    # GIVEN one Pickler reused for a whole stream, records piling up in its memo (see
    # keeper_demo), in a fresh interpreter: where the censuses look for the new records
    # (the young generations, the old one's tail) holds them there; after a whole test
    # session, a collection between two censuses may have put them anywhere in a big heap,
    # and the agent would find them only at a later census
    code = "import json, test_census; print(json.dumps(test_census.keeper_demo()))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=str(Path(__file__).parent),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    facts = json.loads(out.stdout.splitlines()[-1])
    # THEN what keeps them is watched under its holder, its length what it refers to
    (entry,) = facts["entries"]
    assert entry["type"].endswith(".Writer")
    assert facts["len"] >= 80  # 40 records, 2 objects each
    # AND it is read again between censuses by its path
    assert facts["polled"] >= entry["len"] + 20
    # AND nothing keeps a Pickler the program let go
    assert facts["freed"]


def test_a_census_counts_atexit_callbacks() -> None:
    import atexit

    from memprobe.bootstrap.memprobe_agent.cheap import atexit_count

    # GIVEN jobs that each register their flush with atexit (kept in C until exit)
    class Job:
        def flush(self) -> None:
            pass

    jobs = [Job() for _ in range(5)]
    before = atexit_count()
    for job in jobs:
        atexit.register(job.flush)
    try:
        # THEN the count the census reports has gained them
        assert atexit_count() == before + 5
    finally:
        for job in jobs:
            atexit.unregister(job.flush)


def test_a_chain_headed_by_a_context_variable_is_named_by_the_variable() -> None:
    import contextvars

    from memprobe.bootstrap.memprobe_agent import chains
    from memprobe.bootstrap.memprobe_agent.typeinfo import type_name

    # GIVEN trace spans, each new one taking the current span as its parent, where an error
    # path never resets the ContextVar: the variable's value heads a chain of every span
    class Span:
        def __init__(self, parent: Any) -> None:
            self.parent = parent
            self.attrs = {"rows": list(range(10))}

    mod: Any = types.ModuleType("span_demo")
    mod.__file__ = "/srv/app/span_demo.py"
    mod._current_span = contextvars.ContextVar("current_span", default=None)
    sys.modules[mod.__name__] = mod

    def run() -> List[Dict[str, Any]]:
        for _ in range(8):
            mod._current_span.set(Span(mod._current_span.get()))
        # WHEN a census looks from the thread whose context set it (a step boundary's)
        return chains.find({type_name(Span)}, time.perf_counter() + FAR)

    try:
        found = contextvars.copy_context().run(run)
        # THEN the variable names the chain, as the code reads it, with its link
        assert [(c["holder"], c["links"], c["via"]) for c in found] == [
            ("span_demo._current_span.get()", 8, "parent")
        ]
        # AND from a context that never set it (the agent's own thread) nothing is made up
        assert chains.find({type_name(Span)}, time.perf_counter() + FAR) == []
    finally:
        del sys.modules[mod.__name__]


def test_a_chain_of_a_growing_type_is_found_below_the_roots() -> None:
    from memprobe.bootstrap.memprobe_agent import chains
    from memprobe.bootstrap.memprobe_agent.typeinfo import type_name

    # GIVEN a user module whose dataset is wrapped again every round (each wrapper keeps
    # the one before it), beside a single wrapper of another type
    class Subset:
        def __init__(self, dataset: Any, indices: List[int]) -> None:
            self.dataset = dataset
            self.indices = indices

    class View:
        def __init__(self, base: Any) -> None:
            self.base = base

    mod: Any = types.ModuleType("chain_demo")
    mod.__file__ = "/srv/app/chain_demo.py"
    # (and a dozen growing containers of a class with a __dict__, met before it: no chain heads)
    tables = [collections.OrderedDict() for _ in range(12)]  # type: ignore[var-annotated]
    mod.a_tables_by_name = {f"t{i}": t for i, t in enumerate(tables)}
    mod.state = types.SimpleNamespace(train_set=list(range(100)))
    for r in range(6):
        mod.state.train_set = Subset(mod.state.train_set, list(range(100 - r)))
    mod.view = View(View(list(range(5))))
    sys.modules[mod.__name__] = mod
    try:
        names = {type_name(Subset), type_name(View), "dict", "collections.OrderedDict"}
        found = chains.find(names, time.perf_counter() + FAR)
        # THEN the chain is named by the variable holding its head, its links counted
        assert [(c["holder"], c["links"]) for c in found] == [("chain_demo.state.train_set", 6)]
        assert found[0]["type"].endswith("Subset")
        # AND by the attribute that links each to the one before it
        assert found[0]["via"] == "dataset"
        # AND a type no census saw grow is not looked for
        assert chains.find({"dict"}, time.perf_counter() + FAR) == []
    finally:
        del sys.modules[mod.__name__]


def test_a_lineage_through_a_tuple_of_parents_is_a_chain_and_the_longest_head_names_it() -> None:
    from memprobe.bootstrap.memprobe_agent import chains
    from memprobe.bootstrap.memprobe_agent.typeinfo import type_name

    # GIVEN values that record their parents (``out.sources = (a, b)``): a running mean
    # updated from the last mean and each batch's value, 40 updates deep, and a batch
    # value with a short lineage met first (wild_aa/leak_scada_unit_tensor_lineage)
    class Measured:
        def __init__(self, *sources: Any) -> None:
            self.sources = sources

    mod: Any = types.ModuleType("lineage_demo")
    mod.__file__ = "/srv/app/lineage_demo.py"
    mod.a_batch = Measured(Measured(Measured()))

    class Standardizer:
        def __init__(self) -> None:
            self.mean = Measured()

    mod.norm = Standardizer()
    for _ in range(40):
        mod.norm.mean = Measured(mod.norm.mean, Measured(Measured()))
    sys.modules[mod.__name__] = mod
    try:
        found = chains.find({type_name(Measured)}, time.perf_counter() + FAR)
        # THEN the running mean heads the chain, linked through its tuple of parents
        assert [(c["holder"], c["links"], c["via"]) for c in found] == [
            ("lineage_demo.norm.mean", 41, "sources")
        ]
        # AND the chain says the class whose attribute holds its head
        assert [o.rsplit(".", 2)[-2:] for o in found[0]["owners"]] == [["Standardizer", "mean"]]
    finally:
        del sys.modules[mod.__name__]


def test_a_chain_of_closures_is_found_below_the_roots() -> None:
    from memprobe.bootstrap.memprobe_agent import chains

    # GIVEN a user module whose progress handler is made again for every job, each one
    # calling the handler it replaced (as a SIGUSR1 dump chained with signal.getsignal), and
    # beside it a decorator's wrapper around a plain function and a lone closure
    def install(job: List[int], previous: Any) -> Any:
        def dump() -> int:
            return len(job) + (previous() if callable(previous) else 0)

        return dump

    def wrap(fn: Any) -> Any:
        def wrapper() -> Any:
            return fn()

        return wrapper

    mod: Any = types.ModuleType("closure_demo")
    mod.__file__ = "/srv/app/closure_demo.py"
    handler = None
    for j in range(7):
        handler = install(list(range(j)), handler)
    mod.progress = handler
    mod.wrapped = wrap(len)
    mod.lone = install([1], None)
    sys.modules[mod.__name__] = mod
    try:
        found = chains.find({"function", "cell"}, time.perf_counter() + FAR)
        # THEN the chain is named by the variable holding its head, with the variable that
        # links it and its links counted; the wrapper and the lone closure are no chain
        assert [(c["holder"], c["links"], c["via"]) for c in found] == [
            ("closure_demo.progress", 7, "previous")
        ]
        assert found[0]["type"] == "function" and found[0]["closure"].endswith("dump")
        # AND no census that saw no function or cell grow looks for one
        assert chains.find({"dict"}, time.perf_counter() + FAR) == []
    finally:
        del sys.modules[mod.__name__]


def test_a_generator_that_goes_on_with_yield_from_itself_is_a_chain() -> None:
    from memprobe.bootstrap.memprobe_agent import chains

    # GIVEN a user module's epoch stream that goes on with `yield from` itself, six epochs
    # in (each suspended one keeps its own copy of the data), and a generator that loops
    def epochs(epoch: int) -> Iterator[int]:
        copy = list(range(100))
        yield epoch + len(copy) * 0
        yield from epochs(epoch + 1)

    def looping() -> Iterator[int]:
        while True:
            yield 0

    mod: Any = types.ModuleType("stream_demo")
    mod.__file__ = "/srv/app/stream_demo.py"
    mod.stream = epochs(0)
    mod.flat = looping()
    for _ in range(6):
        next(mod.stream)
        next(mod.flat)
    sys.modules[mod.__name__] = mod
    try:
        found = chains.find({"generator"}, time.perf_counter() + FAR)
        # THEN the chain is named by the variable holding its head, its links counted
        assert [(c["type"], c["holder"], c["via"]) for c in found] == [
            ("generator", "stream_demo.stream", "yield from")
        ]
        assert found[0]["links"] >= 5 and found[0]["closure"].endswith("epochs")
    finally:
        del sys.modules[mod.__name__]


def test_what_main_holds_is_named_by_main_before_a_worker_thread() -> None:
    import threading

    from memprobe.bootstrap.memprobe_agent import roots

    # GIVEN a pool held by this (the main) thread's local and by a worker thread's `self`
    class Pool:
        def __init__(self) -> None:
            self._scratch: Dict[str, bytes] = {}

    pool = Pool()
    stop = threading.Event()

    def _run(self: Pool) -> None:
        stop.wait(10)

    worker = threading.Thread(target=_run, args=(pool,))
    worker.start()
    found: List[Tuple[str, Any]] = []

    def look() -> None:
        found.extend(roots.find_matching(lambda v: v is pool._scratch, time.perf_counter() + FAR))

    # WHEN a third thread (the agent's) looks for the pool's dict
    try:
        looker = threading.Thread(target=look)
        looker.start()
        looker.join()
    finally:
        stop.set()
        worker.join()
    # THEN the main thread's local names it first
    assert found and found[0][0].endswith(":pool._scratch"), found


def test_handles_on_memory_outside_python_are_listed_with_what_they_hold() -> None:
    # GIVEN an in-memory sqlite3 database and a big bytearray on an object of a user module,
    # and a small bytearray and a closed connection beside them
    import sqlite3

    class Store:
        def __init__(self) -> None:
            self.conn = sqlite3.connect(":memory:")
            self.conn.execute("CREATE TABLE events (ts INTEGER, route TEXT)")
            self.log = bytearray(200_000)
            self.small = bytearray(10)

    mod = types.ModuleType("native_demo")
    mod.__file__ = "/srv/project/native_demo.py"
    store = Store()
    closed = sqlite3.connect(":memory:")
    closed.close()
    mod.store, mod.closed = store, closed  # type: ignore[attr-defined]
    sys.modules["native_demo"] = mod
    try:
        store.conn.executemany("INSERT INTO events VALUES (?, ?)", [(i, "/a") for i in range(50)])
        found = native.handles(time.perf_counter() + FAR)
        store.conn.executemany("INSERT INTO events VALUES (?, ?)", [(i, "/b") for i in range(30)])
        later = native.handles(time.perf_counter() + FAR)
    finally:
        del sys.modules["native_demo"]
        store.conn.close()
    by_holder = {h["holder"]: h for h in found}
    # THEN the connection is listed with the rows it changed (no SQL run on it), the big
    # buffer with its size; the small buffer and the closed connection are not
    assert by_holder["native_demo.store.conn"] == {
        "holder": "native_demo.store.conn",
        "type": "sqlite3.Connection",
        "rows_changed": 50,
    }
    assert by_holder["native_demo.store.log"]["bytes"] >= 200_000
    assert set(by_holder) == {"native_demo.store.conn", "native_demo.store.log"}
    # AND the next look reads the connection's rows again
    assert {h["holder"]: h for h in later}["native_demo.store.conn"]["rows_changed"] == 80


def test_a_suspended_generators_buffers_are_listed_under_its_name() -> None:
    # GIVEN a generator of the user's code keeping a growing bytearray and a string built
    # with += in its locals, suspended, and reachable from no local a root walk reads (a
    # ``for`` loop's iterator is on its running frame's stack: here, inside a list)
    def reader() -> Iterator[int]:
        buf = bytearray()
        text = ""
        for i in range(100):
            buf += bytes(100_000)
            text += "x" * 100_000
            yield i

    hidden = [reader()]
    for _ in range(3):
        next(hidden[0])
    # WHEN a census' object pass hands its generators to the handle search (as the census
    # taker does, for the census' length)
    from memprobe.bootstrap.memprobe_agent.userroots import CENSUS_SUSPENDED

    res = _take()
    CENSUS_SUSPENDED.extend(res.pop("generators"))
    try:
        found = {h["holder"]: h for h in native.handles(time.perf_counter() + FAR)}
    finally:
        CENSUS_SUSPENDED.clear()
    # THEN each buffer is listed as the generator's local, with what it holds
    assert found["test_census.py:reader:buf"]["bytes"] >= 300_000
    assert found["test_census.py:reader:buf"]["type"] == "bytearray"
    assert found["test_census.py:reader:text"]["type"] == "str"
    assert found["test_census.py:reader:text"]["bytes"] >= 300_000
    # AND without the census' generators nothing reaches them
    assert "test_census.py:reader:buf" not in {
        h["holder"] for h in native.handles(time.perf_counter() + FAR)
    }
    hidden.clear()


def test_a_list_a_waiting_coroutine_keeps_is_named_by_its_local() -> None:
    import asyncio

    from memprobe.bootstrap.memprobe_agent.userroots import CENSUS_SUSPENDED

    # GIVEN an asyncio batcher whose coroutine keeps every request in ``self.pending`` and is
    # waiting in ``await`` (on no thread's stack), the service reachable from nothing else
    class Batcher:
        def __init__(self) -> None:
            self.pending: List[bytes] = []

        async def batch_loop(self, wake: asyncio.Event) -> None:
            while True:
                self.pending.extend(bytes(100) for _ in range(10))
                await wake.wait()

    loop = asyncio.new_event_loop()
    try:
        wake = asyncio.Event()
        coro = Batcher().batch_loop(wake)
        task = loop.create_task(coro)
        loop.run_until_complete(asyncio.sleep(0.01))
        pid = ident(coro.cr_frame.f_locals["self"].pending)  # type: ignore[attr-defined]
        # WHEN a census hands the suspended coroutines it found to the holder search
        CENSUS_SUSPENDED.extend(_take()["generators"])
        try:
            found = roots.search({pid}, time.perf_counter() + FAR)
        finally:
            CENSUS_SUSPENDED.clear()
        # THEN the list is named by the coroutine's local, as if its frame were running
        assert found[pid]["holder"] == "test_census.py:batch_loop:self.pending", found
        task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
    finally:
        loop.close()


def test_a_spooled_temporary_file_is_listed_by_what_it_keeps_in_memory() -> None:
    import tempfile

    # GIVEN a list of spools of a user module (one per partition): one that never rolls over
    # (max_size=0 means never), one that rolled over to a file on disk
    mod: Any = types.ModuleType("spool_demo")
    mod.__file__ = "/srv/project/spool_demo.py"
    mod.spools = [tempfile.SpooledTemporaryFile(max_size=n) for n in (0, 1000)]
    for i in range(2):  # reached through the module only
        mod.spools[i].write(b"x" * 300_000)
    sys.modules["spool_demo"] = mod
    try:
        found = {h["holder"]: h for h in native.handles(time.perf_counter() + FAR)}
    finally:
        del sys.modules["spool_demo"]
        for i in range(2):
            mod.spools[i].close()
    # THEN the list of spools is listed as one handle, by what they keep in memory: the
    # buffer of the one that never rolls over, none of the one on disk
    listed = found["spool_demo.spools"]
    assert listed["type"] == "list of tempfile.SpooledTemporaryFile"
    assert 300_000 <= listed["bytes"] < 400_000


def test_a_torch_profiler_is_listed_with_whether_it_records() -> None:
    # GIVEN a torch profiler held by a user module, started and never stopped while ops run
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    mod = types.ModuleType("profiled_demo")
    mod.__file__ = "/srv/project/profiled_demo.py"
    prof = profile(activities=[ProfilerActivity.CPU])
    mod.prof = prof  # type: ignore[attr-defined]
    sys.modules["profiled_demo"] = mod
    try:
        prof.start()
        torch.ones(8).sum()
        recording = native.handles(time.perf_counter() + FAR)
        prof.stop()
        stopped = native.handles(time.perf_counter() + FAR)
    finally:
        del sys.modules["profiled_demo"]
    # THEN the census lists it under the user's name, recording while it runs
    assert {
        "holder": "profiled_demo.prof",
        "type": "torch.profiler.profiler.profile",
        "recording": 1,
    } in recording
    # AND not once stopped
    assert {h["holder"]: h["recording"] for h in stopped} == {"profiled_demo.prof": 0}


def test_parameters_whose_grad_keeps_its_graph_are_counted() -> None:
    # GIVEN models whose parameters took a backward(create_graph=True): each .grad holds a
    # graph that refers back to its parameter
    torch = pytest.importorskip("torch")
    models = [torch.nn.Linear(4, 4) for _ in range(3)]
    plain = torch.nn.Linear(4, 4)
    for m in models:
        x = torch.randn(2, 4)
        with warnings.catch_warnings():  # torch warns of the very cycle counted here
            warnings.simplefilter("ignore", UserWarning)
            m(x).pow(2).sum().backward(create_graph=True)
    plain(torch.randn(2, 4)).sum().backward()  # its .grad holds no graph
    try:
        # THEN the census counts the weights and biases of the three models, not the plain
        assert _take()["payload"]["tensors"]["grad_graphs"] == 6
        # BUT a census from another thread (the agent's, beside a program whose backward
        # runs without the GIL and replaces .grad meanwhile) reads no .grad at all
        import threading

        beside: List[Dict[str, Any]] = []
        reader = threading.Thread(target=lambda: beside.append(_take()))
        reader.start()
        reader.join()
        assert beside[0]["payload"]["tensors"]["grad_graphs"] == 0
    finally:
        for m in models:
            for p in m.parameters():
                p.grad = None


def test_objects_gc_freeze_moved_out_of_reach_are_counted() -> None:
    # GIVEN garbage in reference cycles that gc.freeze() moves to the permanent generation,
    # where the collector never looks again (nor does gc.get_objects())
    import gc

    class Node:
        def __init__(self) -> None:
            self.me = self

    gc.collect()
    before = gc.get_freeze_count()
    for _ in range(100):
        Node()
    gc.freeze()
    try:
        # THEN the cheap sample and the census count the frozen objects
        out: Dict[str, Any] = {}
        cheap.python_blocks(out)
        assert out["gc:frozen"] == gc.get_freeze_count() >= before + 100
        assert _take()["payload"]["gc"]["frozen"] >= before + 100
    finally:
        gc.unfreeze()
    # AND a program that froze nothing has no such series (the census says 0)
    out = {}
    cheap.python_blocks(out)
    assert "gc:frozen" not in out
    assert _take()["payload"]["gc"]["frozen"] == 0
