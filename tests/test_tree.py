"""A process tree that keeps more processes alive (analysis/tree.py): DataLoaders with
persistent workers kept by a cache, each worker flat, the tree growing."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, List, Optional, Tuple

import numpy as np

from memprobe.analysis import analyze
from memprobe.analysis.finalize import finalize
from memprobe.analysis.tree import tree_series
from memprobe.record import CensusEntry, ExitInfo, Limits, Process, RunRecord, Series

MiB = 2**20


def _run(workers: List[Tuple[float, float]], worker_uss: float, seed: int = 1) -> RunRecord:
    """200 steps of 0.08 s; the main process flat at 500 MiB (RSS and USS in noise); a
    worker per (start, end) second, flat at ``worker_uss`` from its start."""
    rng = np.random.default_rng(seed)
    t = np.arange(200) * 0.08
    steps: List[Optional[int]] = [int(i) for i in range(200)]
    main_rss = 600 * MiB + rng.normal(0, 2 * MiB, len(t))
    main_uss = 500 * MiB + rng.normal(0, 2 * MiB, len(t))
    procs = [
        Process(
            pid=1,
            role="main",
            series={
                "rss_bytes": Series(step=list(steps), t=t.tolist(), value=main_rss.tolist()),
                "uss_bytes": Series(step=list(steps), t=t.tolist(), value=main_uss.tolist()),
            },
            ended="exit",
        )
    ]
    for k, (start, end) in enumerate(workers):
        wt = np.arange(start, end, 0.5)
        flat = [worker_uss] * len(wt)
        procs.append(
            Process(
                pid=100 + k,
                role="worker",
                parent_pid=1,
                series={
                    "rss_bytes": Series(step=[None] * len(wt), t=wt.tolist(), value=flat),
                    "uss_bytes": Series(step=[None] * len(wt), t=wt.tolist(), value=flat),
                },
                ended="vanished",
            )
        )
    return RunRecord(
        command=["synthetic"],
        cwd="/",
        started_at=0.0,
        duration_s=16.0,
        exit=ExitInfo(code=0),
        limits=Limits(ram_bytes=16 * 2**30),
        x_axis="step",
        processes=procs,
    )


def test_workers_kept_alive_stage_after_stage_are_a_leak_of_the_tree() -> None:
    # GIVEN a DataLoader with 2 persistent workers made for each of 5 stages and kept by a
    # cache: 2, 4, ... 10 workers alive, each flat at 60 MiB, the main process flat
    stages = [0.5, 3.5, 6.5, 9.5, 12.5]
    a = analyze(_run([(s, 16.5) for s in stages for _ in range(2)], 60 * MiB))
    # THEN the run is a leak of the process tree, and the finding says processes pile up
    assert a.verdict == "leak", a.signals["1"]
    tree = [f for f in a.findings if f.signal == "tree:uss_bytes"]
    said = "10 processes beside the main one are alive at the end, 2"
    assert tree and said in tree[0].explanation
    assert tree[0].fix_hint is not None and "persistent_workers" in tree[0].fix_hint
    # AND, finished as `memprobe run` finishes a record, it is not said to be memory outside
    # Python's objects
    done = finalize(_run([(s, 16.5) for s in stages for _ in range(2)], 60 * MiB))
    lead = next(f for f in done.findings if f.signal == "tree:uss_bytes")
    assert "outside Python" not in lead.explanation and said in lead.explanation


def test_a_fixed_pool_and_workers_forked_again_every_epoch_are_no_leak_of_processes() -> None:
    # GIVEN 4 workers for the whole run, each one's memory climbing (pages it copies from
    # its parent), and 2 workers forked again for each of 5 epochs
    fixed = _run([(0.5, 16.5)] * 4, 60 * MiB)
    for p in fixed.processes[1:]:
        uss = p.series["uss_bytes"]
        climbing = [v + 3 * MiB * i for i, v in enumerate(uss.value)]
        p.series["uss_bytes"] = Series(step=uss.step, t=uss.t, value=climbing)
    epochs = _run([(e * 3.2 + 0.2, e * 3.2 + 3.0) for e in range(5) for _ in range(2)], 60 * MiB)
    # AND 2 workers and spawn's resource tracker starting 0.1 s apart (a DataLoader's
    # start: the first sample after it sees one process, the next ones three)
    staggered = _run([(0.5, 16.5), (0.62, 16.5), (0.7, 16.5)], 60 * MiB)
    # THEN none keeps more processes alive: no verdict on the tree, no leak
    for run in (fixed, epochs, staggered):
        assert tree_series(run, run.processes[0]) is None
    assert analyze(epochs).verdict != "leak"


def test_the_trees_finding_keeps_its_own_words_beside_a_process_culprit() -> None:
    # GIVEN the run above with the main process' memory and Python heap also growing (the
    # DataLoaders the cache keeps: a census sees `cell` objects grow), as a real run had it
    stages = [0.5, 3.5, 6.5, 9.5, 12.5]
    record = _run([(s, 16.5) for s in stages for _ in range(2)], 60 * MiB)
    main = record.processes[0]
    n = len(main.series["rss_bytes"].t)
    blocks = Series(
        step=list(main.series["rss_bytes"].step),
        t=list(main.series["rss_bytes"].t),
        value=[1e6 + 470.0 * i for i in range(n)],
    )
    main.series["py_alloc_blocks"] = blocks
    rss = main.series["rss_bytes"]
    rising = [v + 0.8 * MiB * i for i, v in enumerate(rss.value)]  # the main process' own
    main.series["rss_bytes"] = Series(step=rss.step, t=rss.t, value=rising)
    census: List[CensusEntry] = []
    for step, cells in [(5, 1000), (25, 1010), (100, 1030), (190, 1050)]:
        grown: List[Any] = [{"type": "cell", "count": cells, "delta": 10}] if step > 5 else []
        census.append(
            {
                "step": step,
                "t": step * 0.08,
                "types": {"cell": {"count": cells}},
                "growing_types": grown,
            }
        )
    record = replace(record, processes=[replace(main, census=census), *record.processes[1:]])
    done = finalize(record)
    # THEN the tree's finding is not merged into the process' culprit: its fix is its own
    tree = [f for f in done.findings if f.signal == "tree:uss_bytes"]
    assert len(tree) == 1 and tree[0].fix_hint is not None
    assert "persistent_workers" in tree[0].fix_hint and tree[0].culprit is None
