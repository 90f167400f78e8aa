"""One finding per culprit, carried graphs and growing holders (pure: issue 12)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, cast

from memprobe.analysis.census_build import build_profile
from memprobe.analysis.culprit import attribute
from memprobe.analysis.culprit_patterns import culprit_for
from memprobe.analysis.grouping import group_findings
from memprobe.analysis.hints import HINT_CARRIED, HINT_DETACH
from memprobe.analysis.native import grown_handles
from memprobe.analysis.verdict import SignalVerdict
from memprobe.record import (
    CensusEntry,
    Culprit,
    Evidence,
    ExitInfo,
    Finding,
    Limits,
    Process,
    RunRecord,
)

MIB = 2**20


def finding(
    signal: str,
    holder: Optional[str] = None,
    type_: Optional[str] = None,
    pattern: Optional[str] = None,
    **evidence: Any,
) -> Finding:
    culprit = {"holder": holder, "type": type_} if holder or type_ else None
    ev: Dict[str, Any] = dict(evidence)
    if pattern:
        ev["pattern"] = pattern
    if culprit:
        ev["culprit_sentence"] = f"`{holder or type_}` grows."
    unit = "bytes" if signal.endswith("bytes") else "count"
    return Finding(
        signal=signal,
        pid=1,
        verdict="leak",
        slope_per_step=1024.0 if unit == "bytes" else 1.0,
        unit=unit,
        confidence=0.99,
        culprit=cast(Optional[Culprit], culprit),
        explanation=f"{signal} grows.",
        evidence=cast(Evidence, ev),
    )


def test_signals_of_one_holder_are_one_finding() -> None:
    # GIVEN the container, the graph-holding items and RSS of one leak, each a finding
    found = [
        finding("container:main:losses:len", "main:losses", "torch.Tensor", "retained graphs"),
        finding("graph:held_by:main:losses", "main:losses", "torch.Tensor", "retained graphs"),
        finding(
            "rss_bytes",
            "main:losses",
            "torch.Tensor",
            "retained graphs",
            growth=40 * MIB,
            container_bytes=2 * MIB,
        ),
    ]
    # WHEN grouped
    out = group_findings(found)
    # THEN one finding leads with memory, lists every signal, and says what it holds now:
    # the memory grown since the leak began (it is the process' only culprit)
    assert len(out) == 1
    f = out[0]
    assert f.signal == "rss_bytes"
    assert f.signals == ["rss_bytes", "graph:held_by:main:losses", "container:main:losses:len"]
    assert f.retained_bytes == 40 * MIB
    assert "It holds ≈ 40.0 MiB now." in f.explanation and "Growing with it" in f.explanation


def test_memory_without_a_culprit_joins_the_only_holder() -> None:
    found = [
        finding("container:__main__.log:len", "__main__.log", "dict", "unbounded container"),
        finding("uss_bytes", growth=5 * MIB),
        finding("tensors:count", None, "torch.Tensor", "tensors kept"),
    ]
    out = group_findings(found)
    assert len(out) == 1 and cast(Dict[str, Any], out[0].culprit or {})["holder"] == "__main__.log"
    assert set(out[0].signals) == {"uss_bytes", "container:__main__.log:len", "tensors:count"}


def test_two_holders_stay_two_findings_and_memory_stays_apart() -> None:
    found = [
        finding("container:a:len", "a", "dict", "unbounded container", container_bytes=1000),
        finding("container:b:len", "b", "list", "unbounded container"),
        finding("rss_bytes", growth=9 * MIB),
    ]
    out = group_findings(found)
    holders = sorted(str(cast(Dict[str, Any], f.culprit or {}).get("holder")) for f in out)
    assert holders == ["None", "a", "b"]
    # with two culprits, neither is said to hold the process' growth
    a = next(f for f in out if cast(Dict[str, Any], f.culprit or {}).get("holder") == "a")
    assert a.retained_bytes == 1000


def test_without_a_holder_the_most_specific_pattern_leads() -> None:
    found = [
        finding("tensors:count", None, "torch.Tensor", "tensors kept"),
        finding("modules:count", None, "ConvNet", "models kept"),
    ]
    out = group_findings(found)
    assert len(out) == 1 and cast(Dict[str, Any], out[0].culprit or {})["type"] == "ConvNet"


def test_retained_at_the_projected_limit() -> None:
    f = finding("rss_bytes", growth=10 * MIB, window=[100, 1000])
    f = Finding(**{**f.__dict__, "projected_oom": {"step": 2000, "t_s": None, "limit_bytes": 1}})
    other = finding("tensors:count", None, "torch.Tensor", "tensors kept")
    out = group_findings([f, other])
    # 10 MiB now, +1 KiB/step for the 1,000 steps to the limit
    assert out[0].retained_bytes_at_oom == 10 * MIB + 1024 * 1000


def test_a_gpu_that_fills_first_leads_the_finding() -> None:
    # GIVEN a list that keeps one device tensor a step: the device gains 512 KiB a step and
    # reaches its limit in 5 minutes; the host gains the Python objects, 1.6 KiB a step
    def projected(f: Finding, t_s: float, step: int, slope: float) -> Finding:
        proj = {"step": step, "t_s": t_s, "limit_bytes": 1}
        return Finding(**{**f.__dict__, "projected_oom": proj, "slope_per_step": slope})

    holder = ("__main__.debug", "torch.Tensor", "tensors kept")
    uss = projected(finding("uss_bytes", *holder, growth=40 * MIB), 9e4, 8 * 10**7, 1600.0)
    gpu = projected(
        finding("cuda:0/allocated_bytes", *holder, growth=14 * 2**30), 326, 287_399, 2**19
    )
    nvml = projected(finding("nvml:0/used_bytes", *holder, growth=14 * 2**30), 320, 285_000, 2**19)
    container = finding("container:__main__.debug:len", *holder)
    # WHEN grouped
    out = group_findings([container, uss, nvml, gpu])
    # THEN one finding, led by the allocator's device signal (its projection is the run's),
    # holding what the host and the device gained together
    assert len(out) == 1
    lead = out[0]
    assert lead.signal == "cuda:0/allocated_bytes" and lead.signals[0] == lead.signal
    assert lead.projected_oom is not None and lead.projected_oom["step"] == 287_399
    assert lead.retained_bytes == 40 * MIB + 14 * 2**30
    # AND without the device, the host's memory leads as before
    alone = group_findings([container, uss])
    assert alone[0].signal == "uss_bytes" and alone[0].retained_bytes == 40 * MIB


# -- carried graphs and growing holders --------------------------------------------------------


def census(step: Optional[int], carried: List[Dict[str, Any]], **extra: Any) -> Dict[str, Any]:
    entry: Dict[str, Any] = {
        "step": step,
        "t": (step or 0) * 0.1,
        "types": {"dict": {"count": 100}},
        "tensors": {"count": 5, "grad_fn_count": 2},
        "graphs": {"nodes": 1, "roots": 1, "largest": 0, "cut": "wrappers", "carried": carried},
        "containers": [],
    }
    entry.update(extra)
    return entry


def test_carried_names_the_state_not_what_hangs_below_it() -> None:
    # GIVEN censuses where `hidden`'s earlier graph outlived each census, and `loss` hangs
    # below `total` (kept by it)
    entries = [
        census(5, []),
        census(25, [{"holder": "t.py:main:hidden", "kept": 1, "node": "StackBackward0"}]),
        census(
            60,
            [
                {"holder": "t.py:main:hidden", "kept": 2, "node": "StackBackward0"},
                {"holder": "t.py:main:out", "kept": 1, "node": "MeanBackward0"},
            ],
        ),
    ]
    c = culprit_for("rss_bytes", build_profile(entries))
    assert c is not None and c.holder == "t.py:main:hidden" and c.fix_hint == HINT_DETACH
    acc = [
        census(5, []),
        census(
            25,
            [
                {"holder": "t.py:main:loss", "kept": 1, "node": "NllLossBackward0"},
                {"holder": "t.py:main:total_loss", "kept": 1, "node": "AddBackward0"},
                {
                    "holder": "t.py:main:logits",
                    "kept": 1,
                    "node": "AddmmBackward0",
                    "below": "t.py:main:loss",
                },
            ],
        ),
    ]
    c = culprit_for("rss_bytes", build_profile(acc))
    assert c is not None and c.holder == "t.py:main:total_loss" and c.fix_hint == HINT_CARRIED
    # AND a running sum in a state dict keeps every step's graph, so the step's encoder
    # outputs and hidden state look carried as long: the sum is named
    s2s = [
        census(5, []),
        census(
            25,
            [
                {"holder": "t.py:main:state.running_loss", "kept": 3, "node": "AddBackward0"},
                {"holder": "t.py:train_epoch:enc_out", "kept": 3, "node": "TransposeBackward1"},
                {"holder": "t.py:train_epoch:h", "kept": 3, "node": "StackBackward0"},
            ],
        ),
    ]
    c = culprit_for("rss_bytes", build_profile(s2s))
    assert c is not None and c.holder == "t.py:main:state.running_loss"
    assert c.fix_hint == HINT_CARRIED


def test_rates_without_steps_are_per_second() -> None:
    box = {
        "holder": "e.py:evaluate:outputs",
        "type": "list",
        "len": 400,
        "first_len": 10,
        "elem_types": ["torch.Tensor"],
        "complete": True,
    }
    entries = [
        census(None, [], t=1.0, containers=[{**box, "len": 10}]),
        census(None, [], t=5.0, containers=[box]),
    ]
    c = culprit_for("container:e.py:evaluate:outputs:len", build_profile(entries))
    assert c is not None and "per second" in c.sentence and "per step" not in c.sentence


def _verdict(verdict: str, ci_low: float) -> SignalVerdict:
    return SignalVerdict(
        verdict, unit="count", axis="step", family="heap", reason="", n=30, ci_low=ci_low
    )


def test_a_container_that_stopped_growing_is_not_blamed() -> None:
    # GIVEN a library registry that filled at start-up and the user's list that grows
    reg = {"holder": "torch.library._impls", "type": "set", "elem_types": ["str"]}
    mine = {"holder": "__main__.results", "type": "list", "elem_types": ["dict"]}
    entries = [
        census(5, [], containers=[{**reg, "len": 100, "first_len": 10}]),
        census(
            25,
            [],
            containers=[{**reg, "len": 1900, "first_len": 10}, {**mine, "len": 30, "first_len": 5}],
        ),
    ]
    proc = Process(pid=1, census=cast(List[CensusEntry], entries))
    record = RunRecord(
        command=["x"],
        cwd="/",
        started_at=0.0,
        duration_s=1.0,
        exit=ExitInfo(code=0),
        limits=Limits(),
        x_axis="step",
        processes=[proc],
    )
    verdicts = {
        (1, "container:torch.library._impls:len"): _verdict("no_leak", 0.0),
        (1, "container:__main__.results:len"): _verdict("inconclusive", 0.4),
    }
    # WHEN RSS leaks and the culprit is looked for with the verdicts at hand
    out = attribute(record, [finding("rss_bytes")], verdicts)
    # THEN the user's list is named, not the faster-grown registry
    assert cast(Dict[str, Any], out[0].culprit or {}).get("holder") == "__main__.results"


def test_a_watched_object_the_census_names_is_one_finding_named_both_ways() -> None:
    # GIVEN memprobe.watch("env.history", env.history) and the census' own holder of it,
    # plus a second watched object the census does not name
    found = [
        finding("rss_bytes", "train.py:main:env.history", "list", "unbounded container"),
        finding("container:train.py:main:env.history:len", "train.py:main:env.history", "list"),
        finding(
            "watch:env.history:len", "env.history", None, "watched object", watch="env.history"
        ),
        finding("watch:best:len", "best", None, "watched object", watch="best"),
    ]
    # WHEN grouped
    out = group_findings(found)
    # THEN the watch joins the census' finding, which says the name the program gave it
    assert len(out) == 2
    main = next(f for f in out if f.signal == "rss_bytes")
    assert "watch:env.history:len" in main.signals
    assert main.holder == "train.py:main:env.history"
    assert "Watched as `env.history`." in main.explanation
    # AND the other watched object keeps a finding of its own under its given name
    other = next(f for f in out if f is not main)
    assert other.holder == "best" and other.signals == ["watch:best:len"]


def test_a_sampled_size_above_all_the_process_holds_is_not_claimed() -> None:
    # GIVEN an lru_cache on a method: every key holds `self`, a catalog of 1.5 MiB shared by
    # thousands of keys, so the agent's sampled size of the cache (each sample counting the
    # catalog, scaled by the cache's length) came out at 283 GiB in a process of 576 MiB
    holder = ("__main__.ShardCatalog.item_vector.<lru_cache>", "torch.Tensor")
    cache = finding(
        "container:__main__.ShardCatalog.item_vector.<lru_cache>:len",
        *holder,
        "unbounded container",
        container_bytes=283 * 2**30,
    )
    uss = finding("uss_bytes", *holder, "unbounded container", growth=227 * MIB)
    uss.evidence["last_value"] = 576 * MIB
    out = group_findings([cache, uss])
    # THEN the finding says what the process' memory gained, not the impossible size
    assert len(out) == 1 and out[0].retained_bytes == 227 * MIB
    assert "GiB" not in out[0].explanation
    # AND a size within what the process holds still stands
    cache.evidence["container_bytes"] = 300 * MIB
    assert group_findings([cache, uss])[0].retained_bytes == 300 * MIB


def part(holder: str, chain: List[str], type_: str, per_step: float, nbytes: int) -> Finding:
    """A container finding with its holder's chain (root, then ``.attr`` / ``[key]`` steps)."""
    return finding(
        f"container:{holder}:len",
        holder,
        type_,
        "unbounded container",
        chain=chain,
        per_step=per_step,
        container_bytes=nbytes,
    )


def test_one_container_per_key_of_one_dict_is_one_finding() -> None:
    # GIVEN a forward hook keeping every activation's statistics, one list per layer in a
    # dict: four containers grow (wild_b/leak_hook_activation_stats), each judged alone
    found = [
        part(
            f"__main__.monitor.act_stats['{k}']",
            ["__main__", ".monitor", ".act_stats", f"['{k}']"],
            "tuple",
            1.0,
            1000 * (k + 1),
        )
        for k in (1, 3, 5, 7)
    ]
    # WHEN grouped
    out = group_findings(found)
    # THEN one finding, named by the dict's items with a wildcard (the same whichever key a
    # census saw first), saying which others grow, holding what the four hold together
    assert len(out) == 1
    f = out[0]
    assert f.holder == "__main__.monitor.act_stats[*]"
    assert "So do 3 more like it in the same container: `['5']`, `['3']`, `['1']`" in (
        f.explanation
    )
    assert f.retained_bytes == 1000 * (2 + 4 + 6 + 8)
    assert len(f.signals) == 4
    assert f.evidence["siblings"][0] == "__main__.monitor.act_stats['7']"  # the biggest leads


def hook_dicts(params: range) -> List[Finding]:
    """One hook dict per parameter, named through the optimizer's parameter list."""
    chain = ["t.py:main:opt", ".param_groups", "[0]", "['params']"]
    return [
        part(
            f"t.py:main:opt.param_groups[0]['params'][{k}]._backward_hooks",
            [*chain, f"[{k}]", "._backward_hooks"],
            "function",
            1.0,
            100,
        )
        for k in params
    ]


def test_only_the_differing_subscripts_become_wildcards() -> None:
    # GIVEN a hook registered on every parameter each step: one hook dict per parameter
    out = group_findings(hook_dicts(range(3)))
    assert [f.holder for f in out] == ["t.py:main:opt.param_groups[0]['params'][*]._backward_hooks"]


def test_a_member_reached_by_another_path_joins_its_family() -> None:
    # GIVEN a hook registered on every parameter each step: six hook dicts named through the
    # optimizer's parameter list, the seventh (the embedding's weight, the same object as
    # the list's [0]) through the model (fresh/leak_grad_noise_hooks)
    found = hook_dicts(range(1, 7))
    emb = ["t.py:main:model", "._modules", "['emb']", "._parameters", "['weight']"]
    stray = "t.py:main:model._modules['emb']._parameters['weight']._backward_hooks"
    found.append(part(stray, [*emb, "._backward_hooks"], "function", 1.0, 100))
    # AND beside it, another frame's hook dicts, and this frame's dicts growing at another pace
    apart = [
        part(
            "t.py:evaluate:net._backward_hooks",
            ["t.py:evaluate:net", "._backward_hooks"],
            "function",
            1.0,
            100,
        ),
        part(
            "t.py:main:probe._backward_hooks",
            ["t.py:main:probe", "._backward_hooks"],
            "function",
            8.0,
            100,
        ),
    ]
    out = group_findings(found + apart)
    # THEN the seventh is one of the family's seven, and the others stay findings of their own
    holders = sorted(f.holder or "" for f in out)
    assert holders == sorted(
        [
            "t.py:main:opt.param_groups[0]['params'][*]._backward_hooks",
            "t.py:evaluate:net._backward_hooks",
            "t.py:main:probe._backward_hooks",
        ]
    )
    family = next(f for f in out if "[*]" in (f.holder or ""))
    assert stray in family.evidence["siblings"] and len(family.evidence["siblings"]) == 7
    assert "(7 in all)" in family.explanation


def test_two_lists_of_one_object_growing_alike_are_one_finding() -> None:
    # GIVEN a mock spy: its mock_calls and call_args_list each gain one call per step and
    # hold the same arguments (each measured alone at ~195 MiB)
    spy = ["__main__", ".augment_spy"]
    found = [
        part(
            "__main__.augment_spy._mock_mock_calls", [*spy, "._mock_mock_calls"], "_Call", 1.0, 200
        ),
        part(
            "__main__.augment_spy._mock_call_args_list",
            [*spy, "._mock_call_args_list"],
            "_Call",
            1.0,
            195,
        ),
    ]
    out = group_findings(found)
    # THEN one finding, named by the bigger, the other beside it; what they may share is
    # counted once (the larger), not twice
    assert len(out) == 1
    assert out[0].holder == "__main__.augment_spy._mock_mock_calls"
    assert "So does `._mock_call_args_list` beside it, on the same object." in out[0].explanation
    assert out[0].retained_bytes == 200


def test_unlike_neighbours_stay_apart() -> None:
    obj = ["__main__", ".trainer"]
    # attributes of one object that grow at different paces or different types
    paces = [
        part("__main__.trainer.history", [*obj, ".history"], "dict", 1.0, 10),
        part("__main__.trainer.grads", [*obj, ".grads"], "dict", 5.0, 10),
        part("__main__.trainer.frames", [*obj, ".frames"], "list", 1.0, 10),
    ]
    assert len(group_findings(paces)) == 3
    # two variables of one function (or one module): two things to fix
    frame = [
        part("t.py:main:confs", ["t.py:main:confs"], "ndarray", 1.0, 10),
        part("t.py:main:corrects", ["t.py:main:corrects"], "ndarray", 1.0, 10),
        part("__main__.a", ["__main__", ".a"], "ndarray", 1.0, 10),
        part("__main__.b", ["__main__", ".b"], "ndarray", 1.0, 10),
    ]
    assert len(group_findings(frame)) == 4


def test_memory_that_grows_with_nothing_python_counts_is_said_to_be_outside_python() -> None:
    # GIVEN a process whose memory grows while its censuses saw no type, no container and
    # not Python's heap blocks grow (rows of an in-memory sqlite3 database never deleted)
    found = [finding("uss_bytes", growth=80 * MIB), finding("rss_bytes", growth=82 * MIB)]
    out = group_findings(found, looked=[1])
    # THEN the finding says where such memory lives and how to find it
    assert len(out) == 1
    assert "outside Python's objects" in out[0].explanation
    assert out[0].fix_hint is not None and "sqlite3" in out[0].fix_hint
    # AND not where no census looked (a forked worker: the census is off there), nor where
    # Python's heap grows with it
    assert "outside Python" not in group_findings(found, looked=[]).pop().explanation
    heap = [*found, finding("py_alloc_blocks")]
    assert "outside Python" not in group_findings(heap, looked=[1]).pop().explanation


def _native_record(native: List[List[Dict[str, Any]]]) -> RunRecord:
    census: List[CensusEntry] = [
        {"step": None, "t": 2.0 * i, "types": {}, "native": cast(List[Any], entry)}
        for i, entry in enumerate(native)
    ]
    proc = Process(pid=1, role="main", census=census)
    return RunRecord(
        command=["gateway.py"],
        cwd="/",
        started_at=0.0,
        duration_s=20.0,
        exit=ExitInfo(code=0),
        limits=Limits(ram_bytes=8 * 2**30, ram_source="machine"),
        x_axis="time",
        processes=[proc],
    )


def test_a_handle_on_memory_outside_python_that_grew_is_named() -> None:
    # GIVEN memory growing with nothing Python counts, and censuses that saw an in-memory
    # sqlite3 connection change more and more rows, beside a buffer that stayed
    conn = "gateway.py:main:store.conn"
    buf = {"holder": "gateway.py:main:scratch", "type": "bytearray", "bytes": 2**20}
    record = _native_record(
        [
            [{"holder": conn, "type": "sqlite3.Connection", "rows_changed": n}, buf]
            for n in (5_000, 40_000, 103_000)
        ]
    )
    found = [finding("uss_bytes", growth=80 * MIB), finding("rss_bytes", growth=82 * MIB)]
    out = group_findings(found, looked=[1], handles=grown_handles(record))
    # THEN the finding names the connection, says what it changed, and how to fix it
    assert len(out) == 1
    f = out[0]
    assert f.holder == conn and f.culprit_type == "sqlite3.Connection"
    assert "changed 98,000 rows between the first and the last of 3 censuses" in f.explanation
    assert f.fix_hint is not None and "deletes" in f.fix_hint
    # AND a buffer that grew by megabytes is named before a connection that was only fed
    grown = dict(buf, bytes=9 * 2**20)
    record = _native_record(
        [
            [{"holder": conn, "type": "sqlite3.Connection", "rows_changed": 10}, buf],
            [{"holder": conn, "type": "sqlite3.Connection", "rows_changed": 20}, grown],
        ]
    )
    assert grown_handles(record)[1].holder == "gateway.py:main:scratch"
    # AND nothing is named where no handle grew, or where Python's heap grows with it
    still = _native_record([[buf], [buf]])
    assert grown_handles(still) == {}
    heap = [*found, finding("py_alloc_blocks")]
    assert group_findings(heap, looked=[1], handles=grown_handles(record))[0].holder is None


def test_a_buffer_that_explains_the_climb_is_named_beside_pythons_heap_growing() -> None:
    # GIVEN memory climbing 350 MiB with Python's heap blocks growing beside it (records
    # built in lists, then written), and spools the censuses saw grow by 311 MiB
    spools = {"holder": "features.py:main:writer.spools", "type": "list of SpooledTemporaryFile"}
    record = _native_record([[dict(spools, bytes=b * MIB)] for b in (16, 120, 327)])
    found = [finding("uss_bytes", growth=350 * MIB), finding("py_alloc_blocks")]
    out = group_findings(found, looked=[1], handles=grown_handles(record))
    # THEN the spools are named, as memory outside Python's objects, without saying that
    # nothing Python counts grows
    f = out[0]
    assert f.holder == "features.py:main:writer.spools"
    assert "memory outside Python's objects" in f.explanation and "grew by 311.0 MiB" in (
        f.explanation
    )
    assert "Nothing Python counts grows" not in f.explanation
    # AND a buffer that rose by a tenth of the climb is not named for it
    small = _native_record([[dict(spools, bytes=b * MIB)] for b in (16, 30, 51)])
    assert group_findings(found, looked=[1], handles=grown_handles(small))[0].holder is None
    # AND where only a type with no holder was seen growing beside (tuples), the buffer that
    # explains the climb is the culprit, with its own hint
    typed = [finding("rss_bytes", growth=350 * MIB), finding("objects:tuple", type_="tuple")]
    (f,) = group_findings(typed, looked=[1], handles=grown_handles(record))
    assert f.holder == "features.py:main:writer.spools"
    assert f.fix_hint is not None and "buffer" in f.fix_hint


def test_a_profiler_recording_at_every_census_is_named_for_memory_outside_python() -> None:
    # GIVEN memory growing with nothing Python counts, and a torch profiler the censuses saw
    # recording at every one of four
    prof = {"holder": "gesture.py:main:prof", "type": "torch.profiler.profiler.profile"}
    record = _native_record([[dict(prof, recording=1)] for _ in range(4)])
    found = [finding("rss_bytes", growth=60 * MIB)]
    out = group_findings(found, looked=[1], handles=grown_handles(record))
    # THEN the finding names the profiler, says it never stopped, and how to stop it
    f = out[0]
    assert f.holder == "gesture.py:main:prof"
    assert "was recording at 4 censuses in a row" in f.explanation
    assert f.fix_hint is not None and "prof.stop()" in f.fix_hint
    # AND one the program stopped only at its end is still named
    stopped_at_end = _native_record([[dict(prof, recording=r)] for r in (1, 1, 1, 1, 0)])
    assert grown_handles(stopped_at_end)[1].censuses == 5
    # AND a profiler that stopped recording at some census (a schedule's windows), or seen
    # recording at only two, is no such handle
    for seen in ((1, 0, 1, 1), (1, 1, 1, 0, 0)):
        windows = _native_record([[dict(prof, recording=r)] for r in seen])
        assert grown_handles(windows) == {}
    assert grown_handles(_native_record([[dict(prof, recording=1)]] * 2)) == {}
