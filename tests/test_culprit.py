"""Culprit attribution on synthetic census payloads (pure: no process, no clock)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Optional, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memprobe.analysis.census_build import build_profile
from memprobe.analysis.census_groups import tree_of_dicts
from memprobe.analysis.culprit import attribute, live_culprit
from memprobe.analysis.culprit_patterns import culprit_for
from memprobe.analysis.hints import HINT_DETACH
from memprobe.record import CensusEntry, ExitInfo, Finding, Limits, Process, RunRecord


def census(
    step: int,
    *,
    roots: int = 1,
    nodes: int = 15,
    largest: int = 15,
    grad_fn: Optional[int] = None,
    tensors: int = 40,
    containers: Optional[List[Dict[str, Any]]] = None,
    modules: int = 3,
    module_types: Optional[Dict[str, int]] = None,
    figures: Optional[int] = None,
    ndarrays: Optional[int] = None,
    root_type: str = "MseLossBackward0",
    tracemalloc: Optional[Dict[str, Any]] = None,
    types: Optional[Dict[str, Any]] = None,
    param_bytes: int = 800,
) -> Dict[str, Any]:
    entry: Dict[str, Any] = {
        "step": step,
        "t": step * 0.01,
        "seq": step,
        "types": types or {"dict": {"count": 1000}},
        "tensors": {
            "count": tensors,
            "grad_fn_count": roots if grad_fn is None else grad_fn,
            "bytes_by_device": {"cpu": 1000},
            "param_bytes": param_bytes,
        },
        "graphs": {
            "nodes": nodes,
            "roots": roots,
            "largest": largest,
            "mean_per_root": round(nodes / max(1, roots), 1),
            "largest_root_type": root_type,
        },
        "modules": {
            "count": modules,
            "types": module_types or {"torch.nn.modules.linear.Linear": 3},
        },
        "containers": containers or [],
    }
    if figures is not None:
        entry["figures"] = {"count": figures}
    if ndarrays is not None:
        entry["ndarray"] = {"count": ndarrays, "bytes": ndarrays * 4096}
    if tracemalloc is not None:
        entry["tracemalloc"] = tracemalloc
    return entry


def box(holder: str, length: int, first_len: int, elem: str, typ: str = "list") -> Dict[str, Any]:
    return {
        "holder": holder,
        "type": typ,
        "len": length,
        "grew": length - first_len,
        "first_len": first_len,
        "elem_types": [elem],
        "chain": holder.split("."),
        "complete": True,
        "scalar": elem in ("float", "int"),
    }


WINDOW = {
    "start_step": 25,
    "end_step": 45,
    "seconds": 1.0,
    "mode": "auto",
    "top": [],
    "tracebacks": [
        {
            "size": 9000,
            "count": 20,
            "user_line": "train.py:31",
            "traceback": ["train.py:31", "torch/nn/functional.py:4315"],
        },
        {"size": 100, "count": 2, "user_line": "train.py:7", "traceback": ["train.py:7"]},
    ],
}


def record(entries: List[Dict[str, Any]], findings: List[Finding]) -> RunRecord:
    proc = Process(pid=7, census=cast(List[CensusEntry], entries))
    return RunRecord(
        command=["python", "train.py"],
        cwd="/",
        started_at=0.0,
        duration_s=1.0,
        exit=ExitInfo(code=0),
        limits=Limits(),
        x_axis="step",
        processes=[proc],
        findings=findings,
    )


def leak(signal: str, **kw: Any) -> Finding:
    return Finding(signal=signal, pid=7, verdict="leak", explanation="It grows.", **kw)


LOSS_LIST = [
    census(5, roots=5, nodes=51, grad_fn=5),
    census(
        25,
        roots=25,
        nodes=231,
        grad_fn=25,
        containers=[box("__main__.losses", 24, 4, "torch.Tensor")],
    ),
    {"step": 45, "t": 0.45, "v": {}, "tracemalloc": WINDOW},
    census(
        400,
        roots=400,
        nodes=3606,
        grad_fn=400,
        containers=[
            box("__main__.losses", 400, 24, "torch.Tensor"),
            box("re._cache", 127, 123, "re.Pattern", "dict"),
        ],
    ),
]


def test_loss_list_names_the_list_the_tensor_the_graph_and_item() -> None:
    # GIVEN censuses where a module-level list gains one graph-holding tensor per step
    rec = record(
        LOSS_LIST, [leak("rss_bytes"), leak("container:__main__.losses:len", unit="count")]
    )
    # WHEN the culprits are attributed
    out = attribute(rec, rec.findings)
    # THEN both findings blame the list, the tensor type and the graphs, with the .item() fix
    for f in out:
        assert f.culprit == {
            "type": "torch.Tensor",
            "holder": "__main__.losses",
            "location": "train.py:31",
            "holds_autograd_graph": True,
        }
        assert f.fix_hint is not None and ".item()" in f.fix_hint
        assert f.evidence["pattern"] == "retained graphs"
        assert f.evidence["allocated_at"][0] == "train.py:31"
        assert f.explanation.startswith("`__main__.losses` (a list) gains 1 torch.Tensor per step")
        assert f.explanation.endswith("It grows.")


def test_growing_graph_is_state_not_detached() -> None:
    # GIVEN one graph gaining 7 nodes a step under a hidden state held by a module global
    entries = [
        census(5, roots=5, nodes=40, largest=35, root_type="TanhBackward0"),
        census(105, roots=105, nodes=740, largest=735, root_type="TanhBackward0"),
    ]
    entries[-1]["graphs"]["largest_holder"] = "__main__.hidden"
    c = culprit_for("graph:nodes", build_profile(entries))
    # THEN it is the detach pattern, with the holder of the graph's tensor
    assert c is not None and c.pattern == "graph carried across steps"
    assert c.holder == "__main__.hidden" and c.holds_autograd_graph
    assert c.fix_hint == HINT_DETACH


def test_a_graph_holder_says_the_classes_on_its_path() -> None:
    # GIVEN one graph growing behind a buffer's tensor that a census named through an
    # object's attribute (wild_y/leak_ppo_rollout_buffer: ``buf.logp[t] = logp`` keeps a
    # CopySlices chain), and the agent's classes for that path
    entries = [
        census(5, roots=5, nodes=40, largest=35, root_type="CopySlices"),
        census(105, roots=105, nodes=740, largest=735, root_type="CopySlices"),
    ]
    entries[-1]["graphs"]["largest_holder"] = "ppo.py:main:buf.logp"
    entries[-1]["graphs"]["holder_types"] = {"ppo.py:main:buf.logp": ["RolloutBuffer.logp"]}
    c = culprit_for("graph:nodes", build_profile(entries))
    # THEN the finding names the class whose attribute holds it, as a container's does
    assert c is not None and c.holder == "ppo.py:main:buf.logp", c
    assert "`ppo.py:main:buf.logp` (`RolloutBuffer.logp`)" in c.sentence
    assert c.evidence.get("holder_types") == ["RolloutBuffer.logp"]
    # AND so does a tensor found carried from census to census
    for e in entries:
        e["graphs"].pop("largest_holder", None)
        e["graphs"]["carried"] = [
            {"holder": "ppo.py:main:buf.logp", "kept": 1, "node": "CopySlices"}
        ]
    carried = culprit_for("graph:nodes", build_profile(entries))
    assert carried is not None and "(`RolloutBuffer.logp`)" in carried.sentence, carried
    assert carried.evidence.get("holder_types") == ["RolloutBuffer.logp"]


def test_a_forward_graph_a_little_longer_at_later_looks_is_no_graph_carried() -> None:
    # GIVEN a beam search whose step graph is 768, 797, 826, 826 nodes at the censuses of
    # steps 5, 25, 100, 400 (a longer decode), named by the agent as it grew, while a list
    # of n-best entries grows (wild_aa/leak_seq2seq_nbest_monitor)
    box = {"holder": "s2s.py:main:monitor.history", "type": "list", "len": 330}
    box |= {"grew": 300, "elem_types": ["__main__.NBestEntry"], "first_len": 30}
    entries = [
        census(step, roots=2, nodes=n, largest=n, root_type="ViewBackward0", containers=[box])
        for step, n in zip([5, 25, 100, 400], [768, 797, 826, 826])
    ]
    entries[1]["graphs"]["largest_holder"] = "s2s.py:main:logits"
    entries[2]["graphs"]["largest_holder"] = "s2s.py:main:logits"
    c = culprit_for("uss_bytes", build_profile(entries))
    # THEN +0.6 nodes per step is no graph carried across steps (one gains a node or more
    # each step)
    assert c is None or c.pattern != "graph carried across steps", c


def test_of_two_tensors_carried_the_one_whose_graph_is_older_holds_the_other() -> None:
    # GIVEN censuses that see two named tensors carried: a bank written in place after each
    # step (its current root made the step before) and the step's ``keys`` written into
    # it (the bank keeps the old ``keys`` graphs alive); ``keys`` is the shorter name
    entries = [census(5 + 100 * i, roots=50, nodes=100, largest=80) for i in range(4)]
    for i, e in enumerate(entries[1:], start=1):
        e["graphs"]["carried"] = [
            {"holder": "xbm.py:step:keys", "kept": i, "node": "DivBackward0", "seq": 1000 * i},
            {
                "holder": "xbm.py:main:trainer.memory.feats",
                "kept": i,
                "node": "IndexPutBackward0",
                "seq": 1000 * i - 10,
            },
        ]
    c = culprit_for("graph:nodes", build_profile(entries))
    # THEN the bank is named: the state the step reads before it makes its own values
    assert c is not None and c.holder == "xbm.py:main:trainer.memory.feats", c
    assert "so does `xbm.py:step:keys`" in c.sentence


def test_a_graph_named_once_then_let_go_is_no_graph_carried_across_steps() -> None:
    # GIVEN self-play games whose graph is bigger one look than the last (the agent names
    # the tensor holding it), then small again at the next look, while snapshots of the
    # network pile up (wild_x/leak_selfplay_lineage)
    largest = [216, 294, 201, 171, 294, 81]
    entries = [
        census(5 + 100 * i, roots=50, nodes=n + 100, largest=n, root_type="NegBackward0")
        for i, n in enumerate(largest)
    ]
    entries[4]["graphs"]["largest_holder"] = "selfplay.py:train_iteration:logp"
    c = culprit_for("rss_bytes", build_profile(entries))
    # THEN the graph that was let go is not blamed as one carried across steps
    assert c is None or c.pattern != "graph carried across steps", c
    # AND nor is one named at the last look, bigger than the look before but not than
    # earlier ones (no look after it to see it let go)
    entries[4]["graphs"].pop("largest_holder")
    entries[5]["graphs"].update(largest=261, largest_holder="selfplay.py:play_batch:logp_sum")
    last = culprit_for("rss_bytes", build_profile(entries))
    assert last is None or last.pattern != "graph carried across steps", last
    # BUT a graph named as it grows (two nodes a step), and no smaller at the looks after,
    # still is
    for e, n in zip(entries, [216, 394, 601, 871, 1094, 1281]):
        e["graphs"]["largest"] = n
    grown = culprit_for("rss_bytes", build_profile(entries))
    assert grown is not None and grown.pattern == "graph carried across steps", grown


def test_total_loss_accumulation_is_told_apart_from_hidden_state() -> None:
    entries = [
        census(5, roots=1, nodes=30, largest=30, root_type="AddBackward0"),
        census(25, roots=1, nodes=150, largest=150, root_type="AddBackward0"),
        census(105, roots=1, nodes=630, largest=630, root_type="AddBackward0"),
    ]
    c = culprit_for("rss_bytes", build_profile(entries))
    assert c is not None and c.pattern == "graph carried across steps"
    assert c.fix_hint is not None and ".item()" in c.fix_hint and ".detach()" in c.fix_hint


def test_model_copies_blame_the_users_model_class_and_its_registry() -> None:
    types = {"torch.nn.modules.conv.Conv2d": 8, "__main__.ConvNet": 2}
    entries = [
        census(5, modules=10, module_types=types),
        census(
            105,
            modules=130,
            module_types={"torch.nn.modules.conv.Conv2d": 104, "__main__.ConvNet": 26},
            containers=[box("__main__.SNAPSHOTS", 26, 2, "__main__.ConvNet")],
            param_bytes=800 * 13,
        ),
    ]
    entries[-1]["types"]["__main__.ConvNet"] = {"count": 26, "kind": "module"}
    c = culprit_for("rss_bytes", build_profile(entries))
    assert c is not None and c.type == "__main__.ConvNet" and c.holder == "__main__.SNAPSHOTS"
    assert c.fix_hint is not None and "load_state_dict" in c.fix_hint


def test_modules_without_parameters_that_pile_up_are_registered_again() -> None:
    # GIVEN a magnitude mask (a module with a buffer, no parameter) registered again on every
    # layer every pruning round: modules grow, the parameters' bytes do not
    mask = "__main__.MagnitudeMask"
    entries = [
        census(25, modules=8, module_types={"torch.nn.modules.linear.Linear": 4}),
        census(100, modules=24, module_types={"torch.nn.modules.linear.Linear": 4, mask: 16}),
        census(180, modules=40, module_types={"torch.nn.modules.linear.Linear": 4, mask: 32}),
    ]
    for e, n in zip(entries[1:], (16, 32)):
        e["types"][mask] = {"count": n, "kind": "module"}
    c = culprit_for("rss_bytes", build_profile(entries))
    # THEN the mask is the culprit, and the fix is to register it once, not old models'
    assert c is not None and c.type == mask and c.pattern == "models kept"
    assert c.fix_hint is not None and "register_parametrization" in c.fix_hint
    assert "load_state_dict" not in c.fix_hint


def test_models_kept_inside_a_hook_dicts_items_are_not_blamed_on_a_log_beside_it() -> None:
    # GIVEN a sweep whose global forward-hook dict keeps one probe per trial (each probe keeps
    # that trial's model), beside the sweep's list of small result tuples growing as fast
    # (wild_w/leak_sweep_sparsity_hooks): no growing container holds the models themselves
    # (the hook dict first seen at the third census, with fewer items gained since than the
    # log, which the censuses followed from the start)
    hooks = "torch.nn.modules.module._global_forward_hooks"
    entries = []
    for step, n in [(25, 2), (100, 6), (400, 12), (600, 17)]:
        log = box("main:results", n, 0, "tuple")
        log["bytes"] = 660 * n
        probes = box(hooks, n + 1, 13, "__main__.SparsityProbe", "collections.OrderedDict")
        probes["bytes"] = 2_600_000 * n
        entries.append(
            census(
                step,
                modules=4 * n,
                module_types={"torch.nn.modules.linear.Linear": 3 * n},
                containers=[log, probes] if n >= 12 else [log],
                param_bytes=800 * n,
            )
        )
    c = culprit_for("rss_bytes", build_profile(entries))
    # THEN the models are said to sit in the items of the hook dict, not of the log
    assert c is not None and c.pattern == "models kept" and c.holder == hooks, c


def test_figures_and_arrays() -> None:
    figs = [census(5, figures=1), census(105, figures=21)]
    c = culprit_for("rss_bytes", build_profile(figs))
    assert c is not None and c.type == "matplotlib.figure.Figure"
    assert c.fix_hint is not None and "plt.close" in c.fix_hint
    arrays = [
        census(5, ndarrays=10),
        census(105, ndarrays=110, containers=[box("run.py:main:kept", 100, 0, "numpy.ndarray")]),
    ]
    c = culprit_for("ndarray:bytes", build_profile(arrays))
    assert c is not None and c.type == "numpy.ndarray" and c.holder == "run.py:main:kept"
    assert c.fix_hint is not None and "preallocate" in c.fix_hint


def test_plain_container_of_dicts() -> None:
    entries = [
        census(5, containers=[]),
        census(25, containers=[box("__main__.EVENT_LOG", 25, 5, "dict")]),
        census(205, containers=[box("__main__.EVENT_LOG", 205, 5, "dict")]),
    ]
    c = culprit_for("py_alloc_blocks", build_profile(entries))
    assert c is not None and c.holder == "__main__.EVENT_LOG" and c.type == "dict"
    assert c.evidence["per_step"] == 1.0 and not c.holds_autograd_graph
    assert c.fix_hint is not None and "deque(maxlen" in c.fix_hint


def test_a_containers_holder_is_said_with_the_classes_on_its_path() -> None:
    # GIVEN a profiler object held as `prof` whose `records` list grows
    def entry(step: int, n: int) -> Dict[str, Any]:
        records = box("main:prof.records", n, 5, "tuple")
        records["owners"] = ["CallProfiler.records"]
        return census(step, containers=[records])

    c = culprit_for("py_alloc_blocks", build_profile([census(5), entry(25, 25), entry(205, 205)]))
    # THEN the finding names the variable and, beside it, the class the code defines it on
    assert c is not None and c.holder == "main:prof.records"
    assert "`main:prof.records` (a list, `CallProfiler.records`)" in c.sentence
    assert c.evidence.get("holder_types") == ["CallProfiler.records"]


def test_a_light_log_beside_what_leaks_is_not_blamed_for_the_memory() -> None:
    # GIVEN an evaluation sweep whose list of result dicts grows (14 small dicts, 4.5 KiB)
    # while its jobs (the script's own class) all stay alive, kept by a chain of signal
    # handlers no container shows (wild_m/leak_site_shift_eval_sweep)
    def entries(log_bytes: float) -> List[Dict[str, Any]]:
        out = []
        for i, (step, n) in enumerate([(5, 0), (25, 4), (100, 9), (205, 14)]):
            results = box("main:results", n, 0, "dict")
            results["bytes"] = log_bytes * n / 14
            jobs = {"type": "__main__.EvalJob", "count": 1 + n, "delta": 5}
            grown = [jobs, {"type": "list", "count": 8000, "delta": 30}] if i else []
            e = census(step, containers=[results] if n else [])
            e["growing_types"] = grown
            out.append(e)
        return out

    c = culprit_for("rss_bytes", build_profile(entries(4502.0)))
    # THEN the memory is blamed on the jobs by their type, not on the log
    assert c is not None and c.type == "__main__.EvalJob" and c.holder is None, c
    # AND a list of dicts that holds megabytes is still the culprit
    heavy = culprit_for("rss_bytes", build_profile(entries(40 * 2**20)))
    assert heavy is not None and heavy.holder == "main:results"


def test_a_chain_of_a_growing_type_is_named_by_the_variable_holding_its_head() -> None:
    # GIVEN censuses that saw Subset objects grow with no container to show for them, and
    # the agent's chain of them below main's `train_set`, longer at each census (a pruning
    # round wraps the last Subset in a new one: wild_n/leak_intrusion_data_pruning)
    subset = "torch.utils.data.dataset.Subset"

    def entries(links: List[int], owners: Optional[List[str]] = None) -> List[Dict[str, Any]]:
        out = [census(5)]
        for i, (step, n) in enumerate([(25, links[0]), (100, links[1]), (400, links[2])]):
            e = census(step, types={subset: {"count": n}})
            e["growing_types"] = [{"type": subset, "count": n, "delta": 4 + i}]
            chain = {"type": subset, "holder": "main:train_set", "links": n, "via": "dataset"}
            if owners:
                chain["owners"] = owners
            e["chains"] = [chain] if n else []
            out.append(e)
        return out

    c = culprit_for("rss_bytes", build_profile(entries([2, 6, 12])))
    # THEN the head's holder is named, with the chain's length at its longest and its link
    assert c is not None and c.type == subset and c.holder == "main:train_set", c
    assert c.evidence.get("chain_links") == 12
    assert "heads a chain of 12 linked by `.dataset`" in c.sentence
    # AND with the class whose attribute holds the head, when the agent gave it
    on = culprit_for("rss_bytes", build_profile(entries([2, 6, 12], ["Pruner.train_set"])))
    assert on is not None and "`main:train_set` (`Pruner.train_set`) heads a chain" in on.sentence
    assert on.evidence.get("holder_types") == ["Pruner.train_set"]
    assert c.fix_hint is not None and "base object" in c.fix_hint
    # BUT without a chain the type alone is said, as before
    bare = culprit_for("rss_bytes", build_profile(entries([0, 0, 0])))
    assert bare is not None and bare.type == subset and bare.holder is None
    # AND so it is for a chain that stays as long (a step's small tree of nodes pointing to
    # their parent, caught in a local while the step ran: sample_scripts/ok_cyclic_garbage)
    # or that one census saw
    for links in ([3, 3, 3], [0, 0, 9]):
        same = culprit_for("rss_bytes", build_profile(entries(links)))
        assert same is not None and same.holder is None, (links, same)


def test_tensors_no_variable_holds_are_blamed_on_a_chain_of_closures() -> None:
    from memprobe.analysis.culprit import attribute

    # GIVEN tensors without graphs that grow with no container to show for them, and the
    # agent's chain of SIGUSR1 handlers, each calling the one it replaced, longer at each
    # census (wild_m/leak_site_shift_eval_sweep: each handler closes over its job)
    handler = "signal.getsignal(signal.SIGUSR1)"

    def entries(links: List[int]) -> List[Dict[str, Any]]:
        out = []
        for i, n in enumerate(links):
            e = census(5 + 100 * i, tensors=40 + 300 * i, grad_fn=0, roots=0, nodes=0)
            e["growing_types"] = [{"type": "function", "count": 900 + n, "delta": 4}]
            chain = {"type": "function", "closure": "install.<locals>._dump", "via": "previous"}
            e["chains"] = [{**chain, "holder": handler, "links": n}] if n else []
            out.append(e)
        return out

    def blamed(links: List[int]) -> Finding:
        rec = record(entries(links), [leak("tensors:count")])
        (f,) = attribute(rec, rec.findings)
        return f

    f = blamed([0, 4, 9])
    # THEN the handler is the holder, with the chain's length at its longest and the fix
    assert f.culprit is not None and f.culprit["holder"] == handler, f
    assert "chain of 9 `install.<locals>._dump` closures" in f.explanation
    assert f.fix_hint is not None and "signal.signal(sig, previous)" in f.fix_hint
    # BUT without a chain, or with a short one that stays as long, no holder is made up
    for links in ([0, 0, 0], [3, 3, 3]):
        bare = blamed(links)
        assert bare.culprit is not None and bare.culprit["holder"] is None, (links, bare)


def test_models_no_variable_holds_are_blamed_on_a_chain_of_snapshots() -> None:
    from memprobe.analysis.culprit import attribute

    # GIVEN networks that pile up with no container to show for them, and the agent's chain
    # of snapshots below main's `league.opponent`, each keeping the one before it through
    # `.parent`, longer at each census (wild_x/leak_selfplay_lineage)
    snap = "__main__.PolicySnapshot"
    entries = []
    for i, n in enumerate([0, 15, 25, 36]):
        e = census(5 + 100 * i, modules=3 + 3 * n, module_types={"__main__.PolicyNet": 1 + n})
        e["growing_types"] = [{"type": snap, "count": n, "delta": 10}] if n else []
        e["chains"] = [
            {"type": snap, "holder": "main:league.opponent", "links": n, "via": "parent"}
        ]
        entries.append(e)
    rec = record(entries, [leak("rss_bytes")])
    (f,) = attribute(rec, rec.findings)
    # THEN the chain's head is the holder, with its link and the fix for a chain
    assert f.culprit is not None and f.culprit["holder"] == "main:league.opponent", f
    assert f"chain of 36 `{snap}` objects, each keeping the one before it (through `.parent`)" in (
        f.explanation
    )
    assert f.fix_hint is not None and "base object" in f.fix_hint


def test_frames_kept_by_one_exception_raised_again_and_again_are_blamed_on_it() -> None:
    from memprobe.analysis.culprit import attribute

    # GIVEN tracebacks that pile up with no container to show for them, and the agent's
    # chain of them from a module-level exception's ``__traceback__``, longer at each census
    # (wild_y/leak_gnn_curriculum_sentinel: ``raise _OVERSIZE`` for every skipped batch)
    entries = []
    for i, n in enumerate([0, 243, 804, 1332]):
        e = census(5 + 100 * i)
        e["growing_types"] = [{"type": "traceback", "count": n, "delta": 200}] if n else []
        e["types"]["traceback"] = {"count": n}
        e["chains"] = [
            {
                "type": "traceback",
                "holder": "__main__._OVERSIZE.__traceback__",
                "links": n,
                "via": "tb_next",
            }
        ]
        entries.append(e)
    rec = record(entries, [leak("rss_bytes")])
    (f,) = attribute(rec, rec.findings)
    # THEN the exception's traceback is the holder, of tracebacks, with the fix for it
    assert f.culprit is not None and f.culprit["holder"] == "__main__._OVERSIZE.__traceback__"
    assert f.culprit["type"] == "traceback", f.culprit
    assert "`__main__._OVERSIZE.__traceback__` heads a chain of 1,332" in f.explanation
    assert f.fix_hint is not None and "with_traceback(None)" in f.fix_hint


def test_objects_kept_by_atexit_callbacks_are_blamed_on_atexit() -> None:
    from memprobe.analysis.culprit import attribute

    # GIVEN forecast jobs that each call `atexit.register(self.flush)`: the jobs grow in
    # number, no container or variable of the program keeps them, and the censuses count
    # atexit's callbacks growing with them (wild_x/leak_atexit_forecast_jobs)
    def entries(callbacks: List[int]) -> List[Dict[str, Any]]:
        out = []
        for i, n in enumerate(callbacks):
            e = census(5 + 100 * i)
            e["gc"] = {"frozen": 0, "atexit": n}
            job = {"type": "__main__.ForecastJob", "count": 2 + 20 * i, "delta": 20}
            e["types"]["__main__.ForecastJob"] = {"count": 2 + 20 * i}
            e["growing_types"] = [job] if i else []
            out.append(e)
        return out

    rec = record(entries([6, 26, 46, 66]), [leak("rss_bytes")])
    (f,) = attribute(rec, rec.findings)
    # THEN atexit's callbacks are the holder, with how many it keeps and the fix
    assert f.culprit is not None and f.culprit["holder"] == "atexit's callbacks (atexit.register)"
    assert "`atexit` keeps 0.2 more callbacks per step (66 now)" in f.explanation, f.explanation
    assert f.fix_hint is not None and "atexit.unregister" in f.fix_hint
    # BUT the few callbacks libraries register at import name nothing
    rec = record(entries([6, 6, 7, 7]), [leak("rss_bytes")])
    (bare,) = attribute(rec, rec.findings)
    assert bare.culprit is None or bare.culprit["holder"] != "atexit's callbacks (atexit.register)"


def test_tensors_kept_by_generators_suspended_in_a_chain_are_blamed_on_its_head() -> None:
    from memprobe.analysis.culprit import attribute

    # GIVEN an epoch stream that goes on with `yield from` itself (wild_u/leak_digits_epoch_
    # stream: each suspended epoch keeps its augmented copy of the data), its chain below
    # main's `stream` longer at each census
    entries = []
    for i, n in enumerate([4, 9, 17]):
        e = census(5 + 100 * i, tensors=40 + 300 * i, grad_fn=0, roots=0, nodes=0)
        link = {"type": "generator", "closure": "epoch_stream", "via": "yield from"}
        e["chains"] = [{**link, "holder": "train.py:main:stream", "links": n}]
        entries.append(e)
    rec = record(entries, [leak("tensors:count")])
    (f,) = attribute(rec, rec.findings)
    # THEN its head is the holder, and the fix is a loop inside one generator
    assert f.culprit is not None and f.culprit["holder"] == "train.py:main:stream", f
    assert "chain of 17 suspended `epoch_stream` generators" in f.explanation
    assert f.fix_hint is not None and "while True:" in f.fix_hint
    # AND where memory alone grows (the copies are arrays no count follows), the chain is
    # the culprit by itself
    for e in entries:
        e["tensors"]["count"] = 40
    rec = record(entries, [leak("rss_bytes")])
    (alone,) = attribute(rec, rec.findings)
    assert alone.culprit is not None and alone.culprit["type"] == "generator", alone
    assert alone.culprit["holder"] == "train.py:main:stream"


def test_a_growing_dict_of_closures_is_blamed_before_a_log_beside_it() -> None:
    # GIVEN a weight-drift monitor's history of (epoch, layer, drift) tuples growing every
    # step, and the optimizer's step post-hooks gaining a closure an epoch, each holding a
    # snapshot of the weights no size reads (wild_m/leak_cnn_weight_drift_monitor)
    history = [box("main:monitor.history", n, 0, "tuple") for n in (4, 18)]
    hooks = box("main:optimizer._optimizer_step_post_hooks", 7, 2, "function", "dict")
    for b, size in ((history[0], 2904.0), (history[1], 12514.0), (hooks, 2476.0)):
        b["bytes"] = size
    entries = [
        census(5),
        census(25, containers=[history[0]]),
        census(100, containers=[history[1], hooks]),
    ]
    c = culprit_for("rss_bytes", build_profile(entries))
    # THEN the hook dict is the culprit, not the log
    assert c is not None and c.holder == "main:optimizer._optimizer_step_post_hooks", c


def test_a_dict_of_flags_keyed_by_messages_names_its_keys() -> None:
    # GIVEN a dict whose values are plain True (the warnings registry: every distinct
    # message a tuple key) that grows by 10 entries a step
    def registry(n: int, first: int) -> Dict[str, Any]:
        entry = box("__main__.__warningregistry__", n, first, "bool", "dict")
        entry["key_types"] = ["tuple"]
        return entry

    entries = [
        census(5, containers=[]),
        census(25, containers=[registry(250, 50)]),
        census(205, containers=[registry(2050, 50)]),
    ]
    c = culprit_for("py_alloc_blocks", build_profile(entries))
    # THEN the finding says what accumulates: entries with tuple keys, not "bool"
    assert c is not None and c.holder == "__main__.__warningregistry__"
    assert c.type == "tuple" and c.evidence["key_type"] == "tuple"
    assert "gains 10 entries (`tuple` keys, `bool` values) per step" in c.sentence
    # AND a dict with tensors for values is still told by its values
    entries[2]["containers"][0]["elem_types"] = ["torch.Tensor"]
    c = culprit_for("py_alloc_blocks", build_profile(entries))
    assert c is not None and c.type != "tuple"


@pytest.mark.parametrize(
    ("box_type", "dtype", "hint_word"),
    [
        ("numpy.ndarray", "float32", "np.concatenate"),
        ("torch.Tensor", "torch.float32", "torch.cat"),
    ],
)
def test_an_array_grown_by_concatenation_gets_the_trim_hint(
    box_type: str, dtype: str, hint_word: str
) -> None:
    # GIVEN the agent's watch of an array (or a tensor) rebuilt longer every step: its length
    # is its element count (4,096 elements a step)
    entries = [
        census(5, containers=[]),
        census(25, containers=[box("main:monitor.window", 180_224, 98_304, dtype, box_type)]),
        census(205, containers=[box("main:monitor.window", 917_504, 98_304, dtype, box_type)]),
    ]
    c = culprit_for("rss_bytes", build_profile(entries))
    # THEN the finding names the array and its elements, and says how to bound it
    assert c is not None and c.holder == "main:monitor.window"
    assert c.type == box_type and f"gains 4,100 {dtype} elements per step" in c.sentence
    assert c.fix_hint is not None and hint_word in c.fix_hint


def test_a_trie_that_keeps_branching_is_named_by_the_holder_of_the_tree() -> None:
    # GIVEN the nodes of a trie watched at several depths below `main:index._root`, each
    # filling a few dozen children, while the heap gains dicts census after census
    root = "main:index._root"
    coupon = root + "".join(f"[{c!r}]" for c in "coupon ")
    order = root + "".join(f"[{c!r}]" for c in "track order 4")
    entries = [
        census(5, containers=[], types={"dict": {"count": 1000}}),
        census(
            25,
            containers=[box(coupon, 20, 2, "dict", "dict"), box(order, 6, 1, "dict", "dict")],
            types={"dict": {"count": 21_000}},
        ),
        census(
            205,
            containers=[box(coupon, 36, 2, "dict", "dict"), box(order, 10, 1, "dict", "dict")],
            types={"dict": {"count": 201_000}},
        ),
    ]
    c = culprit_for("rss_bytes", build_profile(entries))
    # THEN the finding names the tree's holder, not one of its nodes, with the heap's rate
    assert c is not None and c.holder == root and c.pattern == "growing tree"
    assert "gains 1,000 `dict` per step" in c.sentence
    assert c.fix_hint is not None and "trie" in c.fix_hint
    # AND a dict of lists one level down (shards filled in turn) is no tree
    shards = [box(f"main:samples[{k}]", 50, 1, "float", "list") for k in range(3)]
    entries = [census(5, containers=[]), census(205, containers=shards)]
    assert tree_of_dicts(build_profile(entries)) is None


@pytest.mark.parametrize(
    ("holder", "elem", "kind", "hint"),
    [
        # the standard library's registries the agent names (registries.KNOWN_REGISTRIES)
        ("weakref.finalize._registry", "weakref.finalize._Info", "dict", "bound method"),
        ("logging.Logger.manager.loggerDict", "logging.Logger", "dict", "LoggerAdapter"),
        # the interpreter's registry of modules (a module made and registered per trial)
        ("sys.modules", "module", "dict", "del sys.modules[name]"),
        # a ContextVar's mutable default, shared by every context that never set its own
        ("__main__.current_trace(default=…)", "dict", "list", "`default=None`"),
        # a keeper of references, no container (the agent's referents.py)
        ("main:writer._pickler", "dict", "_pickle.Pickler", "clear_memo()"),
        # what an itertools.cycle keeps of a first pass that never ends (the agent's path)
        ("main:target_iter.<cycle saved>", "tuple", "list", "`it = iter(loader)`"),
    ],
)
def test_a_known_keeper_growing_gets_its_own_hint(
    holder: str, elem: str, kind: str, hint: str
) -> None:
    entries = [
        census(5, containers=[]),
        census(25, containers=[box(holder, 400, 20, elem, kind)]),
        census(205, containers=[box(holder, 3000, 20, elem, kind)]),
    ]
    c = culprit_for("rss_bytes", build_profile(entries))
    assert c is not None and c.holder == holder
    assert c.fix_hint is not None and hint in c.fix_hint


def test_a_tee_branch_read_late_gets_the_tee_hint() -> None:
    branch = "main:audit_stream"
    entries = [
        census(5, containers=[]),
        census(25, containers=[box(branch, 1140, 570, "dict", "itertools._tee")]),
        census(205, containers=[box(branch, 11400, 570, "dict", "itertools._tee")]),
    ]
    c = culprit_for("rss_bytes", build_profile(entries))
    assert c is not None and c.holder == branch and "gains 54.1 dict per step" in c.sentence
    assert c.fix_hint is not None and "itertools.tee" in c.fix_hint


def test_one_jump_in_graph_roots_is_not_a_retained_graph() -> None:
    # GIVEN graph roots that jumped once between two censuses (an episode's own graphs, gone
    # at exit) while a list of records grows steadily
    entries = [
        census(5, roots=41, nodes=248),
        census(
            25,
            roots=81,
            nodes=488,
            containers=[box("agent.py:learn:self.history", 500, 100, "dict")],
        ),
        census(
            300,
            roots=0,
            nodes=0,
            containers=[box("agent.py:learn:self.history", 6000, 100, "dict")],
        ),
    ]
    c = culprit_for("py_alloc_blocks", build_profile(entries))
    # THEN the records' list is blamed, not autograd graphs
    assert c is not None and c.pattern == "unbounded container"
    assert c.holder == "agent.py:learn:self.history" and not c.holds_autograd_graph


def test_a_list_of_floats_is_never_blamed() -> None:
    entries = [census(5), census(400, containers=[box("__main__.losses", 400, 4, "float")])]
    assert culprit_for("rss_bytes", build_profile(entries)) is None


def test_non_leaks_and_runs_without_census_pass_through() -> None:
    ok = Finding(signal="rss_bytes", pid=7, verdict="no_leak")
    frag = Finding(signal="cuda:0/reserved_bytes", pid=7, verdict="no_leak", kind="fragmentation")
    lonely = leak("rss_bytes")
    rec = record(LOSS_LIST, [ok, frag])
    assert attribute(rec, rec.findings) == [ok, frag]
    rec = record([], [lonely])
    assert attribute(rec, rec.findings) == [lonely]


def test_live_culprit_line() -> None:
    assert live_culprit(LOSS_LIST[:1]) is None
    assert live_culprit(LOSS_LIST) == "__main__.losses +1 torch.Tensor/step, holds autograd graphs"


junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "step",
                    "types",
                    "graphs",
                    "tensors",
                    "containers",
                    "holder",
                    "len",
                    "first_len",
                    "elem_types",
                    "tracemalloc",
                    "tracebacks",
                    "roots",
                    "largest",
                    "count",
                    "modules",
                    "t",
                ]
            ),
            inner,
            max_size=6,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(junk, max_size=5),
    st.sampled_from(
        ["rss_bytes", "graph:nodes", "objects:dict", "container:x:len", "modules:count"]
    ),
)
def test_malformed_census_never_raises(entries: List[Any], signal: str) -> None:
    # GIVEN whatever a damaged or foreign run record holds in its census list
    rec = record(entries, [leak(signal)])
    # THEN attribution returns one finding per finding, without raising
    out = attribute(rec, rec.findings)
    assert len(out) == 1 and out[0].signal == signal
    live_culprit(entries)


def test_a_type_whose_dense_count_stopped_rising_is_not_blamed_for_later_memory() -> None:
    # GIVEN censuses that saw Transition objects grow while a replay deque filled, and the
    # dense live count of that type judged flat afterwards (the deque reached its maxlen)
    def grew(step: int, delta: int) -> Dict[str, Any]:
        entry = census(step, types={"__main__.Transition": {"count": 3000}})
        entry["growing_types"] = [{"type": "__main__.Transition", "delta": delta}]
        return entry

    entries = [census(5), grew(25, 40), grew(400, 600), grew(587, 300)]
    # WHEN memory grows later and the count's verdict says the type has settled
    blamed = culprit_for("rss_bytes", build_profile(entries))
    settled = culprit_for("rss_bytes", build_profile(entries, settled={"__main__.Transition"}))
    # THEN without the verdicts the type is blamed, with them nothing is
    assert blamed is not None and blamed.type == "__main__.Transition"
    assert settled is None


def test_sibling_lists_filled_in_turn_name_their_parent() -> None:
    # GIVEN per-shard lists of a defaultdict(list) filled one after another: each stops
    # growing once the next starts, so none is a growing container on its own
    shard = "ev.py:main:metrics.samples['shard-00{}']"
    entries = [
        census(5, containers=[box(shard.format(0), 128, 0, "dict")]),
        census(25, containers=[box(shard.format(0), 1280, 0, "dict")]),
        census(
            60,
            containers=[
                box(shard.format(0), 1280, 0, "dict"),
                box(shard.format(1), 900, 0, "dict"),
            ],
        ),
    ]
    prof = build_profile(entries, active=set())
    # WHEN the process' memory grows and a culprit is looked for
    c = culprit_for("rss_bytes", prof)
    # THEN the dict that keeps them is named, with all their items
    assert c is not None and c.holder == "ev.py:main:metrics.samples"
    assert c.evidence["container_len"] == 2180


def test_one_tensor_that_keeps_growing_is_named() -> None:
    # GIVEN censuses whose largest tensor gets longer each time (a memory bank grown with
    # torch.cat), its holder named once it grew, while the tensor count stays flat
    holder = "bank.py:main:criterion._buffers['bank']"

    def grown(step: int, rows: int, named: bool) -> Dict[str, Any]:
        entry = census(step)
        largest: Dict[str, Any] = {"bytes": rows * 512, "shape": [rows, 128], "dtype": "float32"}
        if named:
            largest["holder"] = holder
        entry["tensors"]["largest"] = largest
        return entry

    entries = [grown(5, 20000, False), grown(100, 24000, True), grown(400, 39000, True)]
    entries.append(grown(760, 74000, True))
    # WHEN memory grows and a culprit is looked for
    c = culprit_for("rss_bytes", build_profile(entries))
    # THEN the tensor is named with what it holds and the hint to cap it
    assert c is not None and c.holder == holder and c.pattern == "growing tensor"
    assert c.evidence["container_bytes"] == 74000 * 512
    assert c.fix_hint is not None and "torch.cat" in c.fix_hint
    # AND a largest tensor that stopped growing names nothing
    entries[-1] = grown(760, 39000, True)
    assert culprit_for("rss_bytes", build_profile(entries)) is None


def test_outputs_kept_in_an_eval_loop_get_the_no_grad_hint_whatever_walk_was_whole() -> None:
    # GIVEN training censuses whose whole graph walks saw only the step's loss, then an
    # evaluation loop keeping every batch's logits, whose walks were cut (too many wrappers)
    def cut(step: int, n: int) -> Dict[str, Any]:
        entry = census(
            step,
            roots=n + 1,
            nodes=0,
            largest=0,
            root_type="NllLossBackward0",
            containers=[box("eval.py:main:val_outputs", n, 10, "torch.Tensor")],
        )
        entry["graphs"].update(
            cut="wrappers",
            largest_root_type=None,
            root_types={"AddmmBackward0": n, "NllLossBackward0": 1},
        )
        return entry

    entries = [census(s, root_type="NllLossBackward0") for s in (5, 25, 100, 400)]
    entries += [cut(600, 120), cut(800, 260), cut(1000, 390)]
    rec = record(entries, [leak("rss_bytes")])
    # WHEN the culprit is attributed
    (out,) = attribute(rec, rec.findings)
    # THEN the kept roots are the outputs (not the training loss of an earlier whole walk)
    assert out.culprit is not None and out.culprit["holder"] == "eval.py:main:val_outputs"
    assert out.fix_hint is not None and "no_grad" in out.fix_hint, (out.evidence, out.explanation)


def test_the_first_forward_graph_is_no_graph_carried_across_steps() -> None:
    # GIVEN an evaluation loop keeping every batch's outputs: the census of its first batch
    # saw a graph appear (0 -> 56 nodes, its holder named as the largest one's), later
    # ones the same size, then a walk cut short, while the outputs list kept growing
    def entry(t: float, largest: int, n: int, holder: Optional[str] = None) -> Dict[str, Any]:
        e = census(0, roots=n + 1, nodes=largest, largest=largest, grad_fn=n + 1)
        e.update(step=None, t=t)
        e["graphs"]["largest_root_type"] = "AddmmBackward0"
        if holder is not None:
            e["graphs"].update(largest_holder=holder, largest_holder_node="MeanBackward1")
        if n:
            e["containers"] = [box("eval.py:evaluate:outputs", n, 1, "torch.Tensor")]
        return e

    entries = [entry(2.7, 0, 0), entry(2.9, 0, 0), entry(3.9, 56, 1, "eval.py:evaluate:feats")]
    entries += [entry(14.2, 56, 25), entry(20.4, 0, 38)]
    rec = record(entries, [leak("rss_bytes")])
    # WHEN the culprit is attributed
    (out,) = attribute(rec, rec.findings)
    # THEN the list keeping the outputs is blamed, not the loop variable named at the start
    assert out.culprit is not None and out.culprit["holder"] == "eval.py:evaluate:outputs"
    assert out.evidence.get("pattern") != "graph carried across steps", out.evidence


def _largest_at(step: int, largest: int, total: int, holder: Optional[str] = None) -> Any:
    """A census whose largest tensor is ``largest`` bytes (named ``holder``) among ``total``."""
    e = census(step)
    e["tensors"]["bytes_by_device"] = {"cpu": total}
    e["tensors"]["largest"] = {"bytes": largest, "shape": [largest // 512, 128]}
    if holder is not None:
        e["tensors"]["largest"]["holder"] = holder
    return e


def test_a_growing_tensor_that_overtook_a_bigger_one_is_named() -> None:
    # GIVEN a memory bank grown with torch.cat, smaller than the data tensor at the first
    # censuses and the largest only at the last one (named there), while tensor storage
    # climbed at every census
    mib = 2**20
    bank = "train.py:main:criterion._buffers['bank']"
    entries = [_largest_at(5, 10 * mib, 32 * mib), _largest_at(25, 10 * mib, 33 * mib)]
    entries += [_largest_at(100, 10 * mib, 37 * mib), _largest_at(400, 20 * mib, 52 * mib, bank)]
    rec = record(entries, [leak("rss_bytes")])
    # WHEN the culprit is attributed
    (out,) = attribute(rec, rec.findings)
    # THEN the bank is named as one growing tensor
    assert out.culprit is not None and out.culprit["holder"] == bank
    assert out.evidence.get("pattern") == "growing tensor"


def test_a_batch_that_is_the_largest_tensor_only_lately_is_no_growing_tensor() -> None:
    # GIVEN an evaluation keeping many small embeddings (storage 12 -> 170 MiB over the
    # censuses), whose last census caught a batch of activations (8 MiB, named by its loop
    # variable) as the largest tensor, bigger than the weights seen largest before
    mib = 2**20
    entries = [_largest_at(5, 1 * mib, 12 * mib), _largest_at(25, 1 * mib, 40 * mib)]
    entries += [_largest_at(100, 1 * mib, 90 * mib)]
    entries += [_largest_at(400, 8 * mib, 170 * mib, "eval.py:main:images")]
    rec = record(entries, [leak("rss_bytes")])
    # WHEN the culprit is attributed
    (out,) = attribute(rec, rec.findings)
    # THEN the batch is not blamed as one tensor that keeps growing
    assert out.evidence.get("pattern") != "growing tensor", out.explanation
    assert out.culprit is None or out.culprit.get("holder") != "eval.py:main:images"


def test_censuses_taken_while_evaluating_between_epochs_count_on_the_step_axis() -> None:
    # GIVEN a training loop that evaluates between epochs: step censuses at steps 5 and 25
    # saw nothing, the censuses taken during the evaluations (no step, from the agent's
    # thread) saw the graph behind main:state.running_loss outlive them, four times
    from memprobe.record import Series

    def paused(t: float, kept: int) -> Dict[str, Any]:
        e = census(0, nodes=0, largest=0, root_type="AddBackward0")
        e.update(step=None, t=t)
        e["graphs"].update(
            cut="wrappers",
            carried=[{"holder": "main:state.running_loss", "kept": kept, "node": "AddBackward0"}],
        )
        return e

    entries = [census(5), paused(4.7, 1), census(25), paused(6.8, 2), paused(8.8, 3)]
    entries += [paused(26.1, 4)]
    for e in entries:
        if e["step"] is not None:
            e["t"] = {5: 3.3, 25: 5.4}[e["step"]]
    steps = list(range(1, 301))
    clock = Series(
        step=cast(List[Optional[int]], steps),
        t=[1.0 + 0.1 * s for s in steps],
        value=[1e8] * len(steps),
    )
    proc = Process(pid=7, census=cast(List[CensusEntry], entries), series={"rss_bytes": clock})
    rec = replace(record([], [leak("rss_bytes")]), processes=[proc])
    # WHEN the culprit is attributed
    (out,) = attribute(rec, rec.findings)
    # THEN the running sum is named, from the censuses between the steps
    assert out.culprit is not None and out.culprit["holder"] == "main:state.running_loss"
    assert out.evidence.get("pattern") == "graph carried across steps"


def test_tensors_with_no_graph_and_no_holder_are_not_told_the_loss_graph_hint() -> None:
    # GIVEN censuses where tensors without autograd graphs pile up and no container of the
    # program's grows with them (what a chain of signal handlers' closures keeps, out of the
    # walk's sight: wild_m/leak_site_shift_eval_sweep)
    entries = [
        census(step, roots=0, nodes=0, largest=0, grad_fn=0, tensors=n)
        for step, n in [(5, 40), (25, 140), (100, 520), (400, 2020)]
    ]
    # WHEN the tensor count's culprit is looked for
    c = culprit_for("tensors:count", build_profile(entries))
    # THEN it names the tensors, no holder, and a hint about where they may be kept, not the
    # loss-list hint (which speaks of autograd graphs these tensors do not have)
    assert c is not None and c.pattern == "tensors kept" and c.holder is None
    assert c.fix_hint is not None and "signal.signal" in c.fix_hint
    assert "autograd graph" not in c.fix_hint


def test_objects_frozen_by_gc_freeze_in_a_loop_are_the_culprit() -> None:
    # GIVEN censuses that count more and more objects in the collector's permanent
    # generation (gc.freeze() after every batch of pages parsed into trees with parent
    # links: wild_o/leak_dom_boilerplate_freeze), beside a graph the census saw carried
    def frozen(step: int, n: int) -> Dict[str, Any]:
        entry = census(step)
        entry["gc"] = {"frozen": n}
        return entry

    entries = [frozen(5, 0), frozen(25, 400_000), frozen(100, 1_000_000), frozen(400, 2_100_000)]
    # WHEN memory grows and its culprit is looked for
    c = culprit_for("uss_bytes", build_profile(entries))
    # THEN the frozen objects are named, with the hint to freeze once
    assert c is not None and c.pattern == "frozen garbage"
    assert c.holder is not None and c.holder.startswith("gc.freeze()")
    assert c.fix_hint is not None and "once" in c.fix_hint
    assert c.evidence["frozen"] == 2_100_000
    # AND one gc.freeze() after start-up (a count that stays) names nothing of the kind
    still = [frozen(5, 90_000), frozen(25, 90_000), frozen(100, 90_000), frozen(400, 90_000)]
    c = culprit_for("uss_bytes", build_profile(still))
    assert c is None or c.pattern != "frozen garbage"


def test_parameters_whose_grad_keeps_its_graph_are_the_culprit() -> None:
    # GIVEN censuses that count more and more parameters whose .grad holds an autograd graph
    # (a model fine-tuned per patient with loss.backward(create_graph=True) for a gradient
    # penalty, then dropped: wild_q/leak_client_personalization)
    def grads(step: int, n: int) -> Dict[str, Any]:
        entry = census(step)
        entry["tensors"] = {"count": 40 + n, "grad_fn_count": 2, "grad_graphs": n}
        return entry

    entries = [grads(5, 0), grads(25, 40), grads(100, 180), grads(400, 900)]
    # WHEN memory grows and its culprit is looked for
    c = culprit_for("uss_bytes", build_profile(entries))
    # THEN the gradients that keep their graph are named, with the hint to clear them
    assert c is not None and c.pattern == "gradients that keep their graph"
    assert c.holder == "Parameter.grad"
    assert c.fix_hint is not None and "p.grad = None" in c.fix_hint
    assert c.evidence["grad_graphs"] == 900
    # AND a model whose .grad holds its graph for one step at a time names nothing of the kind
    still = [grads(5, 8), grads(25, 8), grads(100, 8), grads(400, 8)]
    c = culprit_for("uss_bytes", build_profile(still))
    assert c is None or c.pattern != "gradients that keep their graph"
