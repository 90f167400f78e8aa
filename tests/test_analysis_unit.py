"""Unit tests of the leak detector: pure functions, small hand-made series."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, cast

import numpy as np
import pytest

from memprobe.analysis import (
    DetectOptions,
    LiveJudge,
    analyze,
    family_of,
    judge_series,
    prepare,
    project_oom,
    unit_of,
)
from memprobe.analysis.census_growth import items_bytes_rate
from memprobe.analysis.trend import sawtooth_floor
from memprobe.analysis.warmup import detect_warmup
from memprobe.record import CensusEntry, ExitInfo, Limits, Process, RunRecord, Series

STEPS = np.arange(200.0)


def _record(
    series: Dict[str, np.ndarray],
    limits: Optional[Limits] = None,
    stride: int = 1,
    dt: float = 0.05,
    role: str = "main",
) -> RunRecord:
    n = len(next(iter(series.values())))
    steps: List[Optional[int]] = [i * stride for i in range(n)]
    t = [i * dt for i in range(n)]
    proc = Process(
        pid=42,
        role=role,
        series={
            k: Series(step=list(steps), t=list(t), value=list(map(float, v)))
            for k, v in series.items()
        },
    )
    return RunRecord(
        command=["train.py"],
        cwd="/",
        started_at=0.0,
        duration_s=n * dt,
        exit=ExitInfo(code=0),
        limits=limits or Limits(ram_bytes=8 * 2**30, ram_source="machine"),
        x_axis="step",
        processes=[proc],
    )


def test_units_and_families_follow_the_name() -> None:
    # GIVEN signal names, known and new
    # WHEN their unit and family are asked
    # THEN a name ending in "bytes" is bytes, and families follow the prefixes
    assert unit_of("rss_bytes") == "bytes"
    assert unit_of("cuda:1/reserved_bytes") == "bytes"
    assert unit_of("objects:torch.Tensor") == "count"
    assert unit_of("some_future_signal") == "count"
    assert family_of("rss_bytes") == "memory"
    assert family_of("tensors:grad_fn_count") == "object"
    assert family_of("graph:largest") == "object"
    assert family_of("container:__main__.losses:len") == "heap"
    assert family_of("py_alloc_blocks") == "heap"
    assert family_of("cuda:0/max_allocated_bytes") == "peak"
    assert family_of("cuda:0/reserved_bytes") == "allocator"
    assert family_of("cuda:0/allocated_bytes") == "memory"


def test_prepare_uses_steps_and_drops_unstepped_and_bad_samples() -> None:
    # GIVEN a series with steps, a time-only sample, a NaN and two samples at one step
    s = Series(
        step=[None, 1, 2, 2, 3, 4],
        t=[0.0, 0.1, 0.2, 0.25, 0.3, 0.4],
        value=[5.0, 10.0, 12.0, 11.0, float("nan"), 14.0],
    )
    # WHEN it is prepared
    p = prepare(s)
    # THEN x is steps, the time-only sample and the NaN are gone, one step keeps its lowest value
    assert p.axis == "step"
    assert p.x.tolist() == [1.0, 2.0, 4.0]
    assert p.y.tolist() == [10.0, 11.0, 14.0]


def test_prepare_falls_back_to_time_without_steps() -> None:
    # GIVEN a program without steps
    s = Series(step=[None] * 4, t=[0.0, 0.5, 1.0, 1.5], value=[1.0, 2.0, 3.0, 4.0])
    # WHEN prepared THEN x is seconds
    p = prepare(s)
    assert p.axis == "time" and p.x.tolist() == [0.0, 0.5, 1.0, 1.5]


def test_warmup_is_found_from_the_data() -> None:
    # GIVEN a jump at step 3 (lazy optimizer state), then flat with noise
    rng = np.random.default_rng(0)
    y = np.where(STEPS < 3, 100e6, 150e6) + rng.normal(0, 1e5, 200)
    # WHEN the warm-up is looked for
    k = detect_warmup(STEPS, y)
    # THEN it ends just after the jump, not at a fixed fraction
    assert 3 <= k <= 10
    # AND a steady leak has no warm-up to cut
    assert detect_warmup(STEPS, 100e6 + 1e5 * STEPS + rng.normal(0, 1e5, 200)) <= 10


def test_warmup_is_found_before_a_plateau_that_creeps_more_than_its_samples_move() -> None:
    # GIVEN memory read ten times a second: 25 -> 126 MiB over the first 8 s, then a plateau
    # that creeps by about a MiB over 19 s and back, while two samples differ by a page
    t = np.arange(0.0, 27.0, 0.1)
    mib = 2.0**20
    rise = 25 * mib + 101 * mib * (1 - np.exp(-np.minimum(t, 8.0) / 2.5)) / (1 - np.exp(-3.2))
    creep = 0.6 * mib * np.sin(np.pi * np.clip(t - 8.0, 0, None) / 19.0)
    y = np.round((rise + creep) / 4096) * 4096  # whole pages
    # WHEN the warm-up is looked for THEN it ends near the knee, not at the start
    k = detect_warmup(t, y)
    assert 6.0 <= t[k] <= 13.5
    # AND a steady leak read the same way still has none
    assert t[detect_warmup(t, np.round((25 * mib + 4 * mib * t) / 4096) * 4096)] <= 1.0


def test_noise_free_count_plus_one_per_step_is_a_leak_within_tens_of_steps() -> None:
    # GIVEN tensors holding a graph, one more per step, 30 samples
    x = np.arange(30.0)
    # WHEN judged as one of 50 signals
    v = judge_series(x, 7 + x, "count", signal="tensors:grad_fn_count", n_tests=50)
    # THEN it is a leak of exactly +1/step with high confidence
    assert v.verdict == "leak"
    assert v.slope_per_step == pytest.approx(1.0)
    assert v.confidence > 0.99


def test_flat_series_is_no_leak_and_says_why() -> None:
    # GIVEN flat RSS with noise
    y = 300e6 + np.random.default_rng(1).normal(0, 2e5, 200)
    # WHEN judged
    v = judge_series(STEPS, y, "bytes", signal="rss_bytes")
    # THEN no leak, with a reason
    assert v.verdict == "no_leak"
    assert "no growth" in v.reason


def test_plateau_is_no_leak() -> None:
    # GIVEN a cache that fills for 60 steps then stays
    y = 1e8 + np.minimum(STEPS, 60) * 1e6 + np.random.default_rng(2).normal(0, 1e5, 200)
    # WHEN judged THEN no leak
    assert judge_series(STEPS, y, "bytes").verdict == "no_leak"


def test_sawtooth_with_flat_floor_is_no_leak_and_rising_floor_is_a_leak() -> None:
    # GIVEN an epoch list cleared every 25 steps, and the same with a rising floor
    flat = 100 + STEPS % 25
    rising = flat + 0.3 * STEPS
    # WHEN judged
    v_flat = judge_series(STEPS, flat, "count")
    v_rising = judge_series(STEPS, rising, "count")
    # THEN the floor decides
    assert sawtooth_floor(STEPS, flat) is not None
    assert v_flat.verdict == "no_leak" and v_flat.floor
    assert v_rising.verdict == "leak" and v_rising.floor
    assert v_rising.slope == pytest.approx(0.3, rel=0.05)


def test_too_few_samples_is_inconclusive_and_says_what_is_needed() -> None:
    # GIVEN five samples
    v = judge_series(np.arange(5.0), np.arange(5.0), "count")
    # THEN inconclusive, asking for more
    assert v.verdict == "inconclusive"
    assert v.needed and "more samples" in v.needed


def test_noisy_short_series_is_inconclusive_with_an_estimate() -> None:
    # GIVEN a small leak buried in noise over 30 steps
    x = np.arange(30.0)
    y = 300e6 + 20e3 * x + np.random.default_rng(3).normal(0, 400e3, 30)
    # WHEN judged
    v = judge_series(x, y, "bytes")
    # THEN inconclusive, with how many more steps are needed
    assert v.verdict == "inconclusive"
    assert v.needed is not None and "more steps" in v.needed


def test_min_bytes_per_step_option_sets_what_counts() -> None:
    # GIVEN a clean +8 KiB/step growth
    y = 300e6 + 8192 * STEPS
    # WHEN judged with the defaults and with a 1 MiB/step floor
    default = judge_series(STEPS, y, "bytes")
    strict = judge_series(STEPS, y, "bytes", DetectOptions(min_bytes_per_step=2**20))
    # THEN only the defaults call it a leak
    assert default.verdict == "leak"
    assert strict.verdict != "leak"


def test_analyze_fills_findings_verdict_signals_and_projection() -> None:
    # GIVEN a run whose RSS grows 1 MiB/step from 1 GiB, with an 8 GiB RAM limit,
    # and whose tensors with graphs grow +1/step
    rng = np.random.default_rng(4)
    rss = 2**30 + 2**20 * STEPS + rng.normal(0, 1e5, 200)
    record = _record(
        {"rss_bytes": rss, "tensors:grad_fn_count": 3 + STEPS, "objects:dict": 5000 + 0 * STEPS}
    )
    # WHEN analysed
    a = analyze(record)
    # THEN the run leaks; RSS leads, projected to reach 8 GiB at step 7,168 (7 GiB / 1 MiB)
    assert a.verdict == "leak"
    first = a.findings[0]
    assert first.signal == "rss_bytes" and first.kind == "leak" and first.culprit is None
    assert first.projected_oom is not None
    assert first.projected_oom["limit_bytes"] == 8 * 2**30
    assert first.projected_oom["step"] == pytest.approx(7 * 1024, rel=0.01)
    # seconds follow the observed step rate (20 steps/s)
    assert first.projected_oom["step"] is not None
    assert first.projected_oom["t_s"] == pytest.approx(first.projected_oom["step"] * 0.05, rel=0.02)
    assert "limit" in first.explanation and first.evidence["n"] > 0
    graph = next(f for f in a.findings if f.signal == "tensors:grad_fn_count")
    assert graph.fix_hint and "item()" in graph.fix_hint
    # AND per-signal summaries have what a report needs to draw the fit
    summary = a.signals["42"]["rss_bytes"].to_json()  # as run.json keeps it
    for key in (
        "verdict",
        "slope_per_step",
        "slope_per_s",
        "ci_low",
        "ci_high",
        "confidence",
        "warmup_end_x",
        "n",
        "unit",
        "x0",
        "intercept",
        "reason",
    ):
        assert key in summary
    assert a.signals["42"]["objects:dict"].verdict == "no_leak"


def test_heap_count_alone_is_not_a_run_leak() -> None:
    # GIVEN only a list of floats growing (+1/step) while heap blocks and RSS stay put
    rss = 300e6 + np.random.default_rng(5).normal(0, 1e5, 200)
    record = _record(
        {
            "rss_bytes": rss,
            "container:__main__.losses:len": STEPS,
            "py_alloc_blocks": 1e6 + 2 * STEPS,
        }
    )
    # WHEN analysed
    a = analyze(record)
    # THEN the container's growth is reported but not called a run leak
    assert a.verdict == "no_leak"
    assert a.signals["42"]["container:__main__.losses:len"].verdict == "inconclusive"
    assert not a.findings


def test_heap_count_backed_by_heap_blocks_is_a_leak() -> None:
    # GIVEN a list of dicts gaining one per step and heap blocks +8/step
    record = _record(
        {"container:trainer.metrics_log:len": STEPS, "py_alloc_blocks": 1e6 + 8 * STEPS}
    )
    # WHEN analysed THEN it is a leak with a bounded-container hint
    a = analyze(record)
    assert a.verdict == "leak"
    hints = {f.signal: f.fix_hint for f in a.findings}
    assert "deque" in (hints["container:trainer.metrics_log:len"] or "")


def test_fragmentation_is_a_finding_but_not_a_leak() -> None:
    # GIVEN CUDA reserved growing 2 MiB/step while allocated stays flat, and the agent's
    # cached-free figure (reserved - allocated) growing with it
    rng = np.random.default_rng(6)
    allocated = 5e8 + rng.normal(0, 1e4, 200)
    record = _record(
        {
            "cuda:0/reserved_bytes": 1e9 + 2**21 * STEPS,
            "cuda:0/allocated_bytes": allocated,
            "cuda:0/cached_free_bytes": 1e9 + 2**21 * STEPS - allocated,
            "rss_bytes": 3e8 + rng.normal(0, 1e5, 200),
        },
        limits=Limits(ram_bytes=2**34, gpu_bytes=[80 * 2**30]),
    )
    # WHEN analysed
    a = analyze(record)
    # THEN a fragmentation finding with the allocator hint, and the run is no leak
    assert a.verdict == "no_leak"
    frag = [f for f in a.findings if f.kind == "fragmentation"]
    assert len(frag) == 1 and frag[0].verdict == "no_leak"
    assert "expandable_segments" in (frag[0].fix_hint or "")


def test_projection_uses_the_gpu_limit_for_cuda_signals() -> None:
    # GIVEN a GPU allocation growing 1 GiB/step from 10 GiB on an 80 GiB device
    v = judge_series(
        np.arange(50.0), 10 * 2**30 + 2**30 * np.arange(50.0), "bytes", t=np.arange(50.0) * 2.0
    )
    proj = project_oom("cuda:0/allocated_bytes", v, Limits(ram_bytes=2**34, gpu_bytes=[80 * 2**30]))
    # THEN it reaches 80 GiB at step 70, i.e. 140 s (2 s per step)
    assert proj is not None
    assert proj["step"] == 70 and proj["t_s"] == pytest.approx(140.0)
    assert proj["limit_bytes"] == 80 * 2**30


@pytest.mark.parametrize("signal", ["nvml:0/used_bytes", "tensors:cuda:0_bytes"])
def test_the_drivers_view_and_device_tensors_project_to_the_gpu_limit(signal: str) -> None:
    # GIVEN the driver's per-process figure (or the census' device tensors) growing 1 GiB/step
    # from 10 GiB, in a process whose RSS is 2 GiB, with 16 GiB of RAM and an 80 GiB GPU
    v = judge_series(
        np.arange(50.0), 10 * 2**30 + 2**30 * np.arange(50.0), "bytes", t=np.arange(50.0) * 2.0
    )
    limits = Limits(ram_bytes=2**34, gpu_bytes=[80 * 2**30])
    proj = project_oom(signal, v, limits, ram_level=2 * 2**30)
    # THEN it is the GPU that fills, from its own level: step 70, not RAM from the RSS level
    assert proj is not None and proj["limit_bytes"] == 80 * 2**30 and proj["step"] == 70


def test_the_drivers_gpu_figures_are_said_in_words() -> None:
    from memprobe.analysis.findings import describe

    # a CUDA program without torch (CuPy, JAX) has only the driver's figures to lead with
    assert describe("nvml:0/used_bytes")[0] == "GPU 0 memory the driver counts for this process"
    assert describe("nvml:1/device_used_bytes")[0] == "memory used on GPU 1 (every process on it)"
    assert describe("pss_bytes")[0] == "proportional memory (PSS)"


def test_worker_uss_leak_with_flat_rss_gets_the_dataloader_hint() -> None:
    # GIVEN a DataLoader worker whose private memory (USS) climbs while its RSS stays flat
    record = _record({"uss_bytes": 2e7 + 5e5 * STEPS, "rss_bytes": 2e8 + 0 * STEPS}, role="worker")
    # WHEN analysed THEN the hint names the copy-on-access problem
    a = analyze(record)
    assert a.verdict == "leak"
    assert "13246" in (a.findings[0].fix_hint or "")


def test_worker_rss_leak_is_not_blamed_on_copy_on_access() -> None:
    # GIVEN a worker whose RSS itself climbs (it allocates: a cache, a list)
    record = _record(
        {"rss_bytes": 2e8 + 5e5 * STEPS, "uss_bytes": 2e7 + 5e5 * STEPS}, role="worker"
    )
    a = analyze(record)
    assert a.verdict == "leak"
    assert all("13246" not in (f.fix_hint or "") for f in a.findings)


def test_parent_uss_rising_as_its_forked_workers_copy_pages_is_not_its_leak() -> None:
    # GIVEN a main process with flat RSS whose USS climbs, beside a forked worker of its
    rng = np.random.default_rng(5)
    flat_rss = 7e8 + rng.normal(0.0, 2e4, STEPS.size)
    record = _record({"uss_bytes": 3e8 + 5e5 * STEPS, "rss_bytes": flat_rss})
    worker = replace(record.processes[0], pid=43, parent_pid=42, role="worker")
    alone = analyze(record)
    with_worker = analyze(replace(record, processes=[record.processes[0], worker]))
    # WHEN analysed THEN alone its USS is a leak; beside the worker it forked, the pages
    # turning private to it are no finding of its own, and say why
    assert alone.verdict == "leak"
    assert all(f.pid != 42 for f in with_worker.findings)
    assert "forked children" in with_worker.signals["42"]["uss_bytes"].reason
    # AND RSS that climbs with it is still the parent's leak
    leaking = _record({"uss_bytes": 3e8 + 5e5 * STEPS, "rss_bytes": 7e8 + 5e5 * STEPS})
    both = analyze(replace(leaking, processes=[leaking.processes[0], worker]))
    assert any(f.pid == 42 for f in both.findings)


def test_a_slow_container_and_memory_climbing_with_it_are_one_leak() -> None:
    # GIVEN a retry loop that keeps one exception every third step in a list in main()
    # (each pins a rollout's frames), and RSS that climbs unevenly, slowing down
    rng = np.random.default_rng(7)
    steps = np.arange(300.0)
    rss = 3.2e8 + 1.1e8 * np.sqrt(steps / 300) + rng.normal(0.0, 4e6, steps.size)
    kept = np.floor(13 + 0.3 * steps)
    name = "container:train.py:main:failures:len"
    # WHEN analysed with and without the list
    both = analyze(_record({"rss_bytes": rss, name: kept}))
    alone = analyze(_record({"rss_bytes": rss}))
    flat = analyze(_record({"rss_bytes": 3.2e8 + rng.normal(0.0, 4e6, steps.size), name: kept}))
    # THEN together they are a leak held by the list (0.3 items a step is under what a
    # Python-heap count needs on its own); memory alone is not yet, and a list growing
    # beside flat memory is no leak
    assert both.verdict == "leak"
    assert both.verdicts[(42, name)].verdict == "leak"
    assert "RSS grows with it" in both.verdicts[(42, name)].reason
    assert alone.verdict == "inconclusive"
    assert flat.verdict == "no_leak"


def test_time_axis_without_steps() -> None:
    # GIVEN a program without steps whose RSS grows 100 KiB/s, sampled every 0.5 s
    t = np.arange(0.0, 60.0, 0.5)
    proc = Process(
        pid=7,
        series={
            "rss_bytes": Series(
                step=[None] * len(t), t=t.tolist(), value=(3e8 + 102400 * t).tolist()
            )
        },
    )
    record = RunRecord(
        command=["x"],
        cwd="/",
        started_at=0.0,
        duration_s=60.0,
        exit=ExitInfo(code=0),
        limits=Limits(ram_bytes=2**33),
        x_axis="time",
        processes=[proc],
    )
    # WHEN analysed THEN the rate is per second and there is no per-step rate
    a = analyze(record)
    f = a.findings[0]
    assert a.verdict == "leak"
    assert f.slope_per_step is None and f.slope_per_s == pytest.approx(102400, rel=0.01)
    assert f.projected_oom is not None and f.projected_oom["step"] is None


def test_a_program_without_steps_whose_tensors_climbed_to_its_end_leaks() -> None:
    # GIVEN an evaluation sweep with no step at all, 5 s after its 2 s start-up: the tensor
    # count climbs +75/s and RSS +33 MB/s to the program's end (wild_m's site sweep, whose
    # jobs a chain of signal handlers keeps), sampled every 0.05 s
    rng = np.random.default_rng(3)
    t = np.arange(0.0, 7.0, 0.05)
    start = np.minimum(t, 2.0)
    rss = 1.5e7 + 1.4e8 * start + 3.3e7 * np.maximum(t - 2.0, 0) + rng.normal(0, 2e6, len(t))
    count = 40 + 150 * start + 75 * np.maximum(t - 2.0, 0) + rng.normal(0, 3, len(t))

    def run(ended: Optional[str]) -> str:
        none: List[Optional[int]] = [None] * len(t)
        proc = Process(
            pid=7,
            ended=ended,
            series={
                "rss_bytes": Series(step=list(none), t=t.tolist(), value=rss.tolist()),
                "tensors:count": Series(
                    step=list(none), t=t.tolist(), value=count.round().tolist()
                ),
            },
        )
        record = RunRecord(
            command=["x"],
            cwd="/",
            started_at=0.0,
            duration_s=7.0,
            exit=ExitInfo(code=0),
            limits=Limits(ram_bytes=2**34),
            x_axis="time",
            processes=[proc],
        )
        return analyze(record).verdict

    # WHEN the ended program is analysed THEN its climb to the end is no start-up: a leak;
    # while it still runs, 5 s of it may yet be start-up (a dataset built tensor by tensor)
    assert run("exit") == "leak"
    assert run(None) == "inconclusive"


def test_live_judge_does_not_flicker_on_a_steady_run() -> None:
    # GIVEN a steady borderline series re-judged as it grows, point by point
    rng = np.random.default_rng(8)
    n = 400
    y = 300e6 + 3000 * np.arange(n) + rng.normal(0, 2e5, n)
    judge = LiveJudge()
    shown = []
    for end in range(20, n, 4):
        s = Series(step=list(range(end)), t=[i * 0.1 for i in range(end)], value=y[:end].tolist())
        shown.append(judge.update(1, "rss_bytes", s).verdict)
    # WHEN the stable labels are read
    flips = sum(1 for a, b in zip(shown, shown[1:]) if {a, b} == {"leak", "no_leak"})
    leaving_leak = sum(1 for a, b in zip(shown, shown[1:]) if a == "leak" and b != "leak")
    # THEN it never jumps between leak and no_leak, and never leaves leak once there
    assert flips == 0
    assert leaving_leak == 0
    assert judge.run_verdict() == shown[-1]


def test_live_judge_needs_repeated_evidence_to_change() -> None:
    # GIVEN a judge that has shown no_leak
    judge = LiveJudge(hold=3)
    flat = Series(step=list(range(50)), t=[i * 0.1 for i in range(50)], value=[1.0] * 50)
    assert judge.update(1, "container:x:len", flat).verdict == "no_leak"
    # WHEN a leak verdict arrives once, twice, three times
    raw = judge_series(np.arange(50.0), np.arange(50.0), "count")
    seen = [judge.observe(1, "container:x:len", raw).verdict for _ in range(3)]
    # THEN it is shown only the third time
    assert seen == ["no_leak", "no_leak", "leak"]


def test_live_judge_holds_a_new_signals_first_leak_like_any_change() -> None:
    # GIVEN a signal the judge has never seen (a container a census has just found)
    judge = LiveJudge(hold=3)
    raw = judge_series(np.arange(50.0), np.arange(50.0), "count")
    assert raw.verdict == "leak"
    # WHEN its raw verdict is leak at its first three judgements
    seen = [judge.observe(1, "container:x:len", raw).verdict for _ in range(3)]
    # THEN it is shown inconclusive until the leak has held, as for any change
    assert seen == ["inconclusive", "inconclusive", "leak"]
    assert judge.run_verdict() == "leak"


def test_heap_count_growing_too_little_so_far_is_inconclusive() -> None:
    # GIVEN a container gaining one item per step for 30 steps (under the 64 that count)
    x = np.arange(30.0)
    v = judge_series(x, 7 + x, "count", signal="container:trainer.log:len")
    # THEN not "no_leak": it grows; inconclusive with how much longer to watch
    assert v.verdict == "inconclusive"
    assert v.needed is not None and "more steps" in v.needed


def test_a_bounded_deque_filling_is_not_a_leak_of_its_items() -> None:
    # GIVEN a live count of transitions rising +1/step while a deque(maxlen=3000) fills,
    # the tensors they bring along, and a census that saw the deque 1,500 long
    from memprobe.analysis.census_growth import bounded_fill, deque_bounds

    census = [
        {
            "step": 1500,
            "containers": [
                {
                    "holder": "dqn.py:main:replay",
                    "len": 1500,
                    "maxlen": 3000,
                    "elem_types": ["__main__.Transition"],
                }
            ],
        }
    ]
    x = np.arange(0, 1500, 10, dtype=float)
    count = judge_series(x, 100 + x, "count", signal="objects:__main__.Transition")
    tensors = judge_series(x, 40 + 2 * x, "count", signal="tensors:count")
    other = judge_series(x, 5 + x, "count", signal="objects:__main__.Episode")
    assert count.verdict == tensors.verdict == other.verdict == "leak"
    # WHEN the deque bounds are applied
    bounds = deque_bounds(census)
    out = bounded_fill(
        {"objects:__main__.Transition": count, "tensors:count": tensors, "objects:x": other},
        bounds,
    )
    # THEN the item count and the tensors it brings are inconclusive and back nothing
    assert bounds == {"__main__.Transition": ("dqn.py:main:replay", 1500, 3000)}
    for name in ("objects:__main__.Transition", "tensors:count"):
        assert out[name].verdict == "inconclusive" and not out[name].growing
        assert "deque(maxlen=3000)" in out[name].reason
    # AND a type no bounded deque holds still leaks
    assert out["objects:x"].verdict == "leak"
    # AND growth beyond what the deque can take is a leak whatever holds the items
    beyond = judge_series(x, 100 + 4 * x, "count", signal="objects:__main__.Transition")
    assert (
        bounded_fill({"objects:__main__.Transition": beyond}, bounds)[
            "objects:__main__.Transition"
        ].verdict
        == "leak"
    )


def test_dips_that_jump_back_are_no_sawtooth() -> None:
    # GIVEN memory rising steadily with a few one- or two-sample dips (the allocator hands a
    # big block back while a longer copy of a growing tensor is built), irregularly spaced
    x = np.arange(240, dtype=float)
    y = 400e6 + 100e3 * x
    for i in (130, 137, 183, 209, 214, 224, 227, 231, 237):
        y[i : i + 2] -= 30e6
    # WHEN it is looked at for a sawtooth
    saw = sawtooth_floor(x, y)
    # THEN there is none (judged as the rise it is), while a real grow-and-clear series is one
    assert saw is None
    assert judge_series(x, y, "bytes", signal="rss_bytes").verdict == "leak"
    teeth = 400e6 + 1e6 * (x % 20)
    assert sawtooth_floor(x, teeth) is not None


def test_pss_holds_no_verdict_back_once_uss_is_flat() -> None:
    # GIVEN a process whose RSS and USS are judged flat and whose PSS wanders upwards (its
    # share of pages shared with other processes moved)
    from memprobe.analysis.run import _deciding, run_verdict
    from memprobe.analysis.verdict import SignalVerdict

    def v(verdict: str, **kw: Any) -> SignalVerdict:
        return SignalVerdict(verdict, "bytes", "step", "memory", "", 40, **kw)

    flat = v("no_leak")
    wander = v("inconclusive", ci_low=1.0, slope=5000.0, substantial=True, growing=True)
    verdicts = {(1, "rss_bytes"): flat, (1, "uss_bytes"): flat, (1, "pss_bytes"): wander}
    # WHEN the run is called
    # THEN PSS alone does not keep it inconclusive, unless USS does not say no leak
    assert run_verdict(list(verdicts.values())) == "inconclusive"
    assert run_verdict(_deciding(verdicts)) == "no_leak"
    verdicts[(1, "uss_bytes")] = wander
    assert run_verdict(_deciding(verdicts)) == "inconclusive"


def test_unclear_rss_holds_no_verdict_back_once_uss_is_judged_flat() -> None:
    # GIVEN a process whose RSS wanders upwards, unclear, over steps 0-1000, while its USS
    # (what only it maps) is judged no leak on 40 points up to step 990: the rest of RSS is
    # pages other processes map too
    from memprobe.analysis.run import _deciding, run_verdict
    from memprobe.analysis.verdict import SignalVerdict

    def v(verdict: str, n: int = 40, x_end: float = 1000.0, **kw: Any) -> SignalVerdict:
        return SignalVerdict(verdict, "bytes", "step", "memory", "", n, x0=0.0, x_end=x_end, **kw)

    wander = v("inconclusive", ci_low=-1.0, slope=5000.0, substantial=True, growing=True)
    verdicts = {(1, "rss_bytes"): wander, (1, "uss_bytes"): v("no_leak", x_end=990.0)}
    # WHEN the run is called THEN no leak
    assert run_verdict(list(verdicts.values())) == "inconclusive"
    assert run_verdict(_deciding(verdicts)) == "no_leak"
    # AND not on a USS of few points, nor on one that stopped before RSS's last quarter,
    # and never over an RSS that leaks
    verdicts[(1, "uss_bytes")] = v("no_leak", n=12)
    assert run_verdict(_deciding(verdicts)) == "inconclusive"
    verdicts[(1, "uss_bytes")] = v("no_leak", x_end=600.0)
    assert run_verdict(_deciding(verdicts)) == "inconclusive"
    verdicts[(1, "uss_bytes")] = v("no_leak")
    verdicts[(1, "rss_bytes")] = v("leak", slope=5000.0, substantial=True, growing=True)
    assert run_verdict(_deciding(verdicts)) == "leak"


def _census_bytes(points: List[Tuple[int, float]]) -> List[Dict[str, Any]]:
    return [{"step": s, "tensors": {"bytes_by_device": {"cpu": b}}} for s, b in points]


def test_tensor_bytes_that_keep_their_pace_back_ragged_memory() -> None:
    from memprobe.analysis.census_growth import backed_by_tensor_bytes, tensor_bytes_rate
    from memprobe.analysis.verdict import SignalVerdict

    MiB = 2**20
    # GIVEN tensor bytes climbing at an even pace (a bank grown with torch.cat), and a
    # cache that fills fast and then slows to a stop
    leak = _census_bytes([(5, 30 * MiB), (25, 31 * MiB), (100, 35 * MiB), (400, 49 * MiB)])
    cache = _census_bytes([(5, 0.5 * MiB), (25, 1.9 * MiB), (100, 3.6 * MiB), (400, 3.8 * MiB)])
    # WHEN their rate is read
    rate = tensor_bytes_rate(leak, "step", MiB)
    # THEN only the even climb counts
    assert rate > 40_000 and tensor_bytes_rate(cache, "step", MiB) == 0.0
    # AND memory rising significantly but too ragged to be clear becomes a leak beside it,
    # while memory whose lower bound is not above zero does not
    ragged = SignalVerdict(
        "inconclusive",
        "bytes",
        "step",
        "memory",
        "not clear of its noise (x .. y)",
        200,
        slope=60_000.0,
        ci_low=12_000.0,
        ci_high=110_000.0,
    )
    flat = replace(ragged, ci_low=-1_000.0)
    out = backed_by_tensor_bytes({"rss_bytes": ragged, "uss_bytes": flat}, rate, DetectOptions())
    assert out["rss_bytes"].verdict == "leak" and out["uss_bytes"].verdict == "inconclusive"


def test_tensor_bytes_that_climbed_only_in_the_first_half_back_nothing_after() -> None:
    from memprobe.analysis.census_growth import tensor_bytes_rate

    MiB = 2**20
    # GIVEN tensor bytes climbing at four censuses, the last at 9.6 s (a rolling window
    # filling while they were taken: wild_m/ok_flow_knn_context_window), in a process
    # sampled from 0.2 to 17.8 s, and the same censuses in a process that ended at 12 s
    census = [
        {"t": t, "tensors": {"bytes_by_device": {"cpu": b * MiB}}}
        for t, b in [(3.4, 21), (3.8, 22), (4.3, 25), (9.6, 50)]
    ]
    # THEN the climb says nothing of the last third of the longer run; it still backs the
    # shorter one, whose last third it reaches
    assert tensor_bytes_rate(census, "time", MiB, [(0.2, 17.8), (0.5, 17.5)]) == 0.0
    assert tensor_bytes_rate(census, "time", MiB, [(0.2, 12.0)]) > 0.0


def test_tensor_bytes_climbing_evenly_over_spaced_censuses_are_a_leak() -> None:
    from memprobe.analysis.census_growth import even_tensor_climb
    from memprobe.analysis.verdict import SignalVerdict

    MiB = 2**20
    few = SignalVerdict("inconclusive", "bytes", "step", "memory", "only 5 samples", 5)
    # GIVEN tensor bytes at censuses 5, 25, 100, 400, 734 steps: +48 KiB a step all along
    steps = [5, 25, 100, 400, 734]
    even = _census_bytes([(s, 30 * MiB + 48 * 1024 * s) for s in steps])
    # AND a cache that fills fast, then slower and slower
    slowing = _census_bytes(
        [(5, 1 * MiB), (25, 8 * MiB), (100, 20 * MiB), (400, 30 * MiB), (734, 34 * MiB)]
    )
    # WHEN judged from these few censuses alone
    leak = even_tensor_climb({"tensors:cpu_bytes": few}, even, "step", MiB)
    cache = even_tensor_climb({"tensors:cpu_bytes": few}, slowing, "step", MiB)
    # THEN the even climb is a leak at its rate, the slowing one stays inconclusive
    assert leak["tensors:cpu_bytes"].verdict == "leak"
    assert abs((leak["tensors:cpu_bytes"].slope_per_step or 0) - 48 * 1024) < 1
    assert cache["tensors:cpu_bytes"].verdict == "inconclusive"


def test_an_even_climb_on_the_gpu_is_the_gpus_series_not_the_cpus() -> None:
    from memprobe.analysis.census_growth import even_tensor_climb
    from memprobe.analysis.verdict import SignalVerdict

    MiB = 2**20
    few = SignalVerdict("inconclusive", "bytes", "step", "memory", "only 5 samples", 5)
    # GIVEN censuses where the device's tensors climb 512 KiB a step and the host's stay at 0
    steps = [5, 25, 100, 400, 3710]
    census = [
        {"step": s, "tensors": {"bytes_by_device": {"cpu": 0, "cuda:0": 9 * MiB + 2**19 * s}}}
        for s in steps
    ]
    # WHEN judged
    out = even_tensor_climb(
        {"tensors:cpu_bytes": few, "tensors:cuda:0_bytes": few}, census, "step", MiB
    )
    # THEN the device's series is the leak, at its own rate; the host's stays as it was
    assert out["tensors:cuda:0_bytes"].verdict == "leak"
    assert out["tensors:cuda:0_bytes"].slope_per_step == 2**19
    assert out["tensors:cpu_bytes"].verdict == "inconclusive"


def _allocator_staircase(n: int, seed: int) -> np.ndarray:
    """RSS of a +24 KiB/step leak as an allocator shows it: arenas of 1-2 MiB every 40-80
    steps (a rise the steady test sees, and the line-and-noise test does not)."""
    rng = np.random.default_rng(seed)
    x = np.arange(float(n))
    arena = np.zeros(n)
    at, size = 0.0, 0.0
    while at < n:
        size += rng.uniform(1.0, 2.0) * 2**20
        nxt = at + rng.uniform(40.0, 80.0)
        arena[int(at) : int(min(n, nxt))] = size
        at = nxt
    rss = np.maximum(arena, np.ceil(24e3 * x / 4096.0) * 4096.0)
    return 300e6 + rss + rng.normal(0.0, 8e3, n)


def test_a_steady_rise_alone_over_a_short_window_is_not_yet_a_leak() -> None:
    # GIVEN 400 steps of RSS rising as an allocator staircase, and nothing else growing
    # (a preallocated buffer touched page by page rises the same way)
    rss = _allocator_staircase(400, 3)
    flat = np.full(400, 5000.0)
    alone = analyze(_record({"rss_bytes": rss, "py_alloc_blocks": flat}))
    # THEN not a leak yet, but not "no leak" either
    v = alone.verdicts[(42, "rss_bytes")]
    assert v.verdict == "inconclusive" and "nothing else grows" in v.reason
    assert alone.verdict == "inconclusive"
    # WHEN a container grows with it (+1 item a step), or the rise goes on for 1,500 steps
    growing = np.arange(400.0)
    backed = analyze(_record({"rss_bytes": rss, "container:main:kept:len": growing}))
    longer = analyze(_record({"rss_bytes": _allocator_staircase(1500, 3)}))
    # THEN it is a leak
    assert backed.verdicts[(42, "rss_bytes")].verdict == "leak"
    assert longer.verdicts[(42, "rss_bytes")].verdict == "leak"
    # BUT 1,100 steps of a rise only the steady test sees stand alone over 55 s, not 5.5 s
    # (an allocator grows its arenas for seconds after a replay deque of fast steps fills).
    # Judged whole: the warm-up finder may cut the first treads of a staircase, and what is
    # left, a line the line-and-noise test sees (as it sees 10 of 12 such staircases whole)
    whole = DetectOptions(max_warmup_fraction=0.0)
    stairs = _allocator_staircase(1100, 4)
    slow = analyze(_record({"rss_bytes": stairs}, dt=0.05), whole).verdicts[(42, "rss_bytes")]
    fast = analyze(_record({"rss_bytes": stairs}, dt=0.005), whole).verdicts[(42, "rss_bytes")]
    assert slow.steady and slow.verdict == "leak"
    assert fast.steady and fast.verdict == "inconclusive"


def _carried(record: RunRecord, kept: List[int], s_per_step: float) -> RunRecord:
    """The record with censuses at steps 5, then 25, 100, 400 ... that saw the graph behind
    ``main:total_loss`` outlive ``kept[i]`` censuses in a row (``total_loss += loss``)."""
    census: List[CensusEntry] = [{"step": 5, "t": 5 * s_per_step, "graphs": {"nodes": 60}}]
    for i, k in enumerate(kept):
        carried = [{"holder": "main:total_loss", "kept": k, "node": "AddBackward0"}]
        step = 25 * 4**i
        census.append({"step": step, "t": step * s_per_step, "graphs": {"carried": carried}})
    proc = replace(record.processes[0], census=census)
    return replace(record, processes=[proc])


def test_a_graph_carried_over_several_censuses_backs_a_steady_rise() -> None:
    # GIVEN 400 steps of RSS rising as an allocator staircase, and censuses that saw the
    # graph behind main:total_loss outlive them (total_loss += loss), at one, then at
    # three censuses in a row
    record = _record({"rss_bytes": _allocator_staircase(400, 3)})
    once = analyze(_carried(record, [1], 0.05)).verdicts[(42, "rss_bytes")]
    kept = analyze(_carried(record, [1, 2, 3], 0.05)).verdicts[(42, "rss_bytes")]
    # THEN one look is not enough to back it; a graph kept across three is
    assert once.verdict == "inconclusive" and "nothing else grows" in once.reason
    assert kept.verdict == "leak" and kept.steady


def _buffers(record: RunRecord, sizes: List[int]) -> RunRecord:
    """The record with censuses at steps 5, 25, 100, 400 ... that read a ``BytesIO`` of the
    program's at these sizes."""
    census: List[CensusEntry] = []
    for i, size in enumerate(sizes):
        step = 5 if i == 0 else 25 * 4 ** (i - 1)
        buf = {"holder": "main:journal._buf", "type": "_io.BytesIO", "bytes": size}
        census.append({"step": step, "t": step * 0.05, "native": [buf]})
    proc = replace(record.processes[0], census=census)
    return replace(record, processes=[proc])


def test_a_buffer_read_rising_backs_a_steady_rise_even_read_just_after_a_flush() -> None:
    # GIVEN 400 steps of RSS rising as an allocator staircase, and censuses that read the
    # program's BytesIO growing (truncated without a seek back: every write pads up to the
    # old position), the last read just after a flush emptied it
    record = _record({"rss_bytes": _allocator_staircase(400, 3)})
    MB = 2**20
    rising = analyze(_buffers(record, [57_000, MB // 3, 2 * MB, 6 * MB, 114]))
    # THEN the buffer's climbing peaks back the rise: a leak (and so they do flushed mid-run,
    # each peak far above the one before)
    assert rising.verdicts[(42, "rss_bytes")].verdict == "leak"
    flushed = analyze(_buffers(record, [57_000, MB // 3, 114, 6 * MB, 30 * MB]))
    assert flushed.verdicts[(42, "rss_bytes")].verdict == "leak"
    # AND a buffer read at about one size, or one high read only once, or a spool per epoch
    # emptied (rolled over to disk) and filled again to about the same peak, backs nothing
    spool = [300_000, 2 * MB, 8 * MB, 3 * MB, 10 * MB]
    # (a checkpoint buffer rewritten each time, caught mid-write at two censuses of seven:
    # wild_v/ok_cluster_sim_checkpoints busy)
    rewritten = [2_214_621, 80, 80, 80, 80, 80, 5_538_407]
    for sizes in ([MB, MB + 10, MB - 10, MB], [1000, 4 * MB, 2000, 1500], spool, rewritten):
        v = analyze(_buffers(record, sizes)).verdicts[(42, "rss_bytes")]
        assert v.verdict == "inconclusive" and "nothing else grows" in v.reason


def test_memory_climbing_unevenly_while_a_profiler_records_or_a_buffer_climbs_is_a_leak() -> None:
    # GIVEN RSS climbing 367 -> 500 MiB over 450 steps in uneven stairs with dips (a torch
    # profiler's event blocks, read every 8 steps), not clear of its noise band on its own
    mib = [367, 410, 410, 418, 427, 427, 431, 439, 435, 435, 437, 436, 428, 435, 446, 444]
    mib += [449, 447, 455, 453, 456, 455, 457, 457, 455, 447, 448, 456, 457, 457, 451, 456]
    mib += [456, 457, 455, 465, 471, 471, 472, 479, 475, 480, 486, 490, 481, 492, 492, 492]
    mib += [498, 492, 495, 496, 500, 500, 500, 500, 500]
    record = _record({"rss_bytes": np.array(mib, dtype=float) * 2**20}, stride=8, dt=0.4)
    alone = analyze(record).verdicts[(42, "rss_bytes")]
    assert alone.verdict == "inconclusive" and "noise" in alone.reason, alone.reason

    def profiled(recording: List[int]) -> RunRecord:
        census: List[CensusEntry] = []
        for i, on in enumerate(recording):
            prof = {"holder": "main:prof", "type": "torch.profiler.profiler.profile"}
            census.append({"step": 8 * 14 * i, "t": 5.6 * i, "native": [dict(prof, recording=on)]})
        return replace(record, processes=[replace(record.processes[0], census=census)])

    # WHEN the censuses saw the program's profiler recording at every one (stopped by the
    # program's clean-up at the last)
    v = analyze(profiled([1, 1, 1, 1, 0])).verdicts[(42, "rss_bytes")]
    # THEN the climb is that profiler's: a leak, and the reason names it
    assert v.verdict == "leak" and "main:prof" in v.reason, v.reason
    # AND a profiler recording in windows (a schedule's) backs nothing
    windows = analyze(profiled([1, 0, 1, 0, 1])).verdicts[(42, "rss_bytes")]
    assert windows.verdict == "inconclusive", windows.reason

    def buffered(sizes: List[int]) -> RunRecord:
        census: List[CensusEntry] = []
        for i, size in enumerate(sizes):
            buf = {"holder": "main:journal._buf", "type": "_io.BytesIO", "bytes": size}
            census.append({"step": 8 * 14 * i, "t": 5.6 * i, "native": [buf]})
        return replace(record, processes=[replace(record.processes[0], census=census)])

    # AND so does a buffer of the program's whose peaks climbed by a good share of the climb
    # (a BytesIO journal truncated without a seek back: wild_o/leak_ctr_step_journal)
    journal = analyze(buffered([57_000, 2**20, 9 * 2**20, 40 * 2**20])).verdicts[(42, "rss_bytes")]
    assert journal.verdict == "leak" and "main:journal._buf" in journal.reason, journal.reason
    # AND not a buffer that rose by a few MiB of a 133 MiB climb
    small = analyze(buffered([57_000, 2**20, 2 * 2**20, 3 * 2**20])).verdicts[(42, "rss_bytes")]
    assert small.verdict == "inconclusive", small.reason


def test_a_graph_kept_across_censuses_lets_a_late_rise_of_fast_steps_count() -> None:
    # GIVEN 1,500 steps of 2 ms (3 s), RSS flat while the allocator's free space absorbs a
    # chain's first 780 steps, then rising +13 KiB/step in 64 KiB pages (1.4 s of clock),
    # and censuses that saw the graph behind main:total_loss at one, then three in a row
    steps = np.arange(0.0, 1500.0, 25.0)
    rise = np.clip(steps - 780.0, 0.0, None) * 13 * 1024
    rss = 337e6 + np.floor(rise / 2**16) * 2**16
    record = _record({"rss_bytes": rss}, stride=25, dt=0.05)
    once = analyze(_carried(record, [1], 0.002)).verdicts[(42, "rss_bytes")]
    kept = analyze(_carried(record, [1, 2, 3], 0.002)).verdicts[(42, "rss_bytes")]
    # THEN seen once, the rise is too short on the clock to tell from caches filling; with
    # the graph kept across three censuses, it is that chain: a leak
    assert once.verdict == "inconclusive", once.reason
    assert kept.verdict == "leak", kept.reason


def test_memory_that_rose_mid_run_then_stayed_flat_is_no_leak() -> None:
    # GIVEN RSS flat for 6,000 steps, rising 57 MiB over the next 2,900 (a replay memory
    # filling up to its bound, a DQN's), then flat for 5,100 steps: an S the straight line
    # through it is no fit for, so its rise is not clear of the band around that line (and
    # past the first half of the run: no warm-up to cut)
    rng = np.random.default_rng(5)
    x = np.arange(0.0, 14000.0, 30.0)
    fill = np.clip((x - 6000.0) / 2900.0, 0.0, 1.0) * 57 * 2**20
    rss = 340e6 + np.floor(fill / 2**18) * 2**18 + rng.normal(0.0, 30e3, len(x))
    record = _record({"rss_bytes": rss}, stride=30, dt=0.09)
    # WHEN judged
    v = analyze(record).verdicts[(42, "rss_bytes")]
    # THEN the rise has ended: no leak, and it holds nothing back
    assert v.verdict == "no_leak" and "grew, then no growth" in v.reason, v.reason
    assert analyze(record).verdict == "no_leak"


def test_a_fill_that_levelled_off_while_pages_still_fault_in_has_stopped() -> None:
    from memprobe.analysis.verdict import _stopped_for_long

    # GIVEN 18 s of RSS at 75 ms samples: a kernel dictionary filling in ~1.5 MiB steps
    # every 0.5 s for 12 s (wild_r/ok_krls_air_quality), then only its pages still faulted in
    # at 10 KiB/s for 6 s
    t = np.arange(0.0, 18.0, 0.075)
    fill = np.floor(np.minimum(t, 12.0) / 0.5) * 1.5 * 2**20
    rss = 57 * 2**20 + fill + np.clip(t - 12.0, 0.0, None) * 10 * 1024
    slope, total, options = 3 * 2**20 / 2, float(2**20), DetectOptions()
    # THEN a quarter of the window's slope is the limit, as for a clear rise that levels off:
    # the fill stopped (the floor of 1 KiB/s alone would call the page faults growth)
    assert _stopped_for_long(t, rss, slope, options.plateau_ratio * slope, total, options)
    assert not _stopped_for_long(t, rss, slope, 1024.0, total, options)
    # AND a tail still climbing at 40 % of the window's slope has not stopped
    climbing = 57 * 2**20 + fill + np.clip(t - 12.0, 0.0, None) * 0.4 * slope
    assert not _stopped_for_long(t, climbing, slope, options.plateau_ratio * slope, total, options)


def test_a_long_rise_flat_for_its_last_seconds_has_not_stopped() -> None:
    from memprobe.analysis.verdict import _stopped_for_long

    # GIVEN the RSS a batch job's verdict window saw: 11 s of rise, then 2.7 s flat while it
    # removed its shards at the end (wild_w/leak_tile_lineage_audithook, busy: its loop had
    # ended, its growth had not; called "grew, then no growth lately" without this rule)
    data = json.loads((Path(__file__).parent / "data" / "rise_then_cleanup.json").read_text())
    x, y = np.array(data["x"]), np.array(data["y"])
    slope, total, options = float(data["slope"]), float(data["total"]), DetectOptions()
    # THEN a flat end shorter than a quarter of the rise before it is no end of the rise
    assert not _stopped_for_long(x, y, slope, options.plateau_ratio * slope, total, options)
    # BUT the same rise followed by as long a flat stretch as a quarter of it has stopped
    dt = float(x[-1] - x[-2])
    more = np.arange(1, int(2.0 / dt) + 1) * dt + x[-1]
    x2, y2 = np.concatenate([x, more]), np.concatenate([y, np.full(len(more), y[-1])])
    assert _stopped_for_long(x2, y2, slope, options.plateau_ratio * slope, total, options)


@pytest.mark.slow  # statistical sweep: in CI, out of the fast loop
def test_an_allocator_staircase_never_passes_for_a_rise_that_stopped() -> None:
    # GIVEN leaks of 2-60 KiB/step drawn as an allocator does: arenas of 0.5-4 MiB with
    # pauses of half to one and a half times their mean spacing, cut at every length
    def stairs(n: int, seed: int, rate: float, arena: float) -> np.ndarray:
        rng = np.random.default_rng(seed)
        x = np.arange(float(n))
        level = np.zeros(n)
        at, size, per = 0.0, 0.0, 1.5 * arena / rate
        while at < n:
            size += rng.uniform(arena, 2 * arena)
            nxt = at + rng.uniform(0.5 * per, 1.5 * per)
            level[int(at) : int(min(n, nxt))] = size
            at = nxt
        pages = np.ceil(rate * x / 4096.0) * 4096.0
        return 300e6 + np.maximum(level, pages) + rng.normal(0.0, 8e3, n)

    stopped = []
    for rate in (2e3, 5e3, 12e3, 24e3, 60e3):
        for arena in (0.5 * 2**20, 2**20, 2 * 2**20):
            for seed in range(3):
                full = stairs(3000, seed, rate, arena)
                for n in range(240, 3001, 240):
                    v = analyze(_record({"rss_bytes": full[:n]})).verdicts[(42, "rss_bytes")]
                    if "grew, then no growth" in v.reason:
                        stopped.append((rate, arena, seed, n))
    # THEN no cut is taken for growth that ended (a tread is no end of the rise)
    assert not stopped, stopped


def test_a_sawtooth_of_few_periods_that_stays_level_is_no_leak() -> None:
    # GIVEN a start-up rise, then epochs whose lists are dropped and refilled: 30 MiB
    # dips every 250 samples that fill again within 25, back to the same level (four
    # periods: too few to judge the floor's slope),
    rng = np.random.default_rng(2)
    n = 1000
    x = np.arange(float(n))
    start = 300e6 + 80e6 * np.minimum(1.0, (x + 1) / 60.0)
    phase = x % 250
    dip = np.where((x >= 250) & (phase < 25), 30 * 2**20 * (1 - phase / 25), 0.0)
    rss = 10e6 + start - dip + rng.normal(0.0, 100e3, n)
    rss[600] += 20 * 2**20  # and one spike in an epoch (the peaks alone do not stay level)
    # AND the same with each epoch coming back 8 MiB higher
    rising = rss + 8 * 2**20 * (x // 250)
    # WHEN judged
    flat = analyze(_record({"rss_bytes": rss})).verdicts[(42, "rss_bytes")]
    worse = analyze(_record({"rss_bytes": rising})).verdicts[(42, "rss_bytes")]
    # THEN the level one is no leak, the rising one is not
    assert flat.verdict == "no_leak", flat.reason
    assert worse.verdict != "no_leak", worse.reason


def test_heap_blocks_that_rose_while_a_cache_filled_do_not_back_a_steady_rise() -> None:
    # GIVEN 400 steps of RSS rising as an allocator staircase, and Python heap blocks that
    # drift up within their noise (+6 a step against a wobble of ±1,500: a bounded cache
    # filling, then churning)
    rss = _allocator_staircase(400, 3)
    rng = np.random.default_rng(8)
    blocks = 600_000 + 6.0 * np.arange(400.0) + rng.normal(0.0, 1500.0, 400)
    a = analyze(_record({"rss_bytes": rss, "py_alloc_blocks": blocks}))
    b = a.verdicts[(42, "py_alloc_blocks")]
    assert b.verdict != "leak" and b.growing, b.reason
    # THEN the blocks back nothing: not a leak yet
    v = a.verdicts[(42, "rss_bytes")]
    assert v.verdict == "inconclusive" and "nothing else grows" in v.reason, v.reason
    assert a.verdict == "inconclusive"


def test_items_bytes_on_the_clock_leave_out_lists_of_numbers() -> None:
    # GIVEN censuses of 1 ms steps: a bar's history of metric dicts holding tensors gains
    # one 1.5 KiB item every 10 steps; a loss history of floats gains one every step
    def census(step: int) -> Dict[str, Any]:
        hist = {"holder": "main:pbar.history", "len": step // 10, "bytes": step // 10 * 1536}
        floats = {"holder": "main:losses", "len": step, "bytes": step * 32, "scalar": True}
        return {"step": step, "t": step / 1000.0, "containers": [hist, floats]}

    entries = [census(s) for s in (100, 400, 4_000, 12_000)]
    # WHEN their items' growth is read per step and per second
    per_step, _ = items_bytes_rate(entries, "step")
    per_s, grown = items_bytes_rate(entries, "time", objects_only=True)
    # THEN per step it is below the 1 KiB that counts, per second far above it
    assert per_step < 1024
    assert abs(per_s - 153_600) < 1 and abs(grown - 1190 * 1536) < 1
    # AND the floats alone count for nothing on the clock
    floats_only = [dict(e, containers=e["containers"][1:]) for e in entries]
    assert items_bytes_rate(floats_only, "time", objects_only=True) == (0.0, 0.0)


def test_a_steep_first_block_before_an_even_climb_is_still_a_steady_rise_on_steps() -> None:
    from memprobe.analysis.trend import steady_rise

    # GIVEN block medians that climb evenly (exceptions kept at random steps, each pinning
    # a rollout's tensors), after one steep first block the warm-up cut left in
    rises = [0.186, 0.055, 0.044, 0.035, 0.103, 0.119, 0.045, 0.057, 0.068, 0.063, 0.022]
    rises += [0.034, 0.026, 0.037, 0.106]
    x = np.arange(0.0, 16 * 13)
    y = 300e6 + 90e6 * np.repeat(np.concatenate([[0.0], np.cumsum(rises)]), 13)
    # WHEN looked at for a steady rise, on the step axis and on the clock
    # THEN on steps it is one; on the clock (where a preload still under way rises just
    # like that before a program's first step) the deceleration still counts
    assert steady_rise(x, y, steep_start=True) is not None
    assert steady_rise(x, y) is None


def test_heap_blocks_clear_of_their_band_are_backed_by_memory_rising_at_the_steps() -> None:
    # GIVEN 600 steps of heap blocks climbing +25 a step clear of their wobble (a logging
    # handler added every epoch, each keeping formatted lines), and RSS read at every step
    # rising +5 KiB a step on a random walk, too ragged to be clear of its own noise
    rng = np.random.default_rng(2)
    x = np.arange(600.0)
    blocks = 1.1e6 + 25.0 * x + rng.normal(0.0, 40.0, 600)
    walk = np.cumsum(rng.normal(0.0, 60e3, 600))
    rss = 330e6 + 5 * 1024.0 * x + walk + rng.normal(0.0, 50e3, 600)
    a = analyze(_record({"py_alloc_blocks": blocks, "rss_bytes": rss}))
    v = a.verdicts[(42, "rss_bytes")]
    assert v.verdict == "inconclusive" and v.substantial, v.reason
    # THEN the two measurements of one growth make a leak
    assert a.verdicts[(42, "py_alloc_blocks")].verdict == "leak"
    assert a.verdict == "leak"
    # BUT the same blocks with memory read a tenth as often back nothing yet
    sparse = _record({"py_alloc_blocks": blocks})
    proc = sparse.processes[0]
    every = Series(
        step=list(range(0, 600, 30)),
        t=[i * 0.05 for i in range(0, 600, 30)],
        value=[float(r) for r in rss[::30]],
    )
    sparse = replace(sparse, processes=[replace(proc, series={**proc.series, "rss_bytes": every})])
    assert analyze(sparse).verdicts[(42, "py_alloc_blocks")].verdict != "leak"


def test_counts_in_findings_are_never_written_in_exponent_form() -> None:
    from memprobe.analysis.wording import fmt_count, fmt_rate

    # GIVEN rates of items a finding states (an event bus keeping 1,230 payloads a second)
    # THEN they read as a person writes them, to three significant digits
    assert [fmt_count(v) for v in (0.25, 1.0, 43.5, 1234.5, 24497.0)] == [
        "0.25",
        "1",
        "43.5",
        "1,230",
        "24,500",
    ]
    assert fmt_rate("count", "s")(1234.5) == "+1,230/s"
    assert fmt_count(float("nan")) == "–"


def test_heap_blocks_a_free_list_could_hold_are_not_backed_by_memory_merely_rising() -> None:
    # GIVEN heap blocks climbing +5 a step clear of their wobble for 250 steps (~1,250 in
    # all: a tuple free list filling, which stops at 2,000: a gradient-accumulation loop)
    # and RSS read at every step rising +8 KiB a step on a ragged walk, not clear of its noise
    rng = np.random.default_rng(0)

    def judged(steps: int) -> Any:
        x = np.arange(float(steps))
        blocks = 1.08e6 + 5.0 * x + rng.normal(0.0, 3.0, steps)
        walk = np.cumsum(rng.normal(0.0, 60e3, steps))
        rss = 350e6 + 8 * 1024.0 * x + walk + rng.normal(0.0, 100e3, steps)
        return analyze(_record({"py_alloc_blocks": blocks, "rss_bytes": rss}))

    short = judged(250)
    rss = short.verdicts[(42, "rss_bytes")]
    assert rss.verdict == "inconclusive" and rss.substantial, rss.reason
    # THEN the blocks are not a leak on that backing: more than a free list holds is needed
    assert short.verdicts[(42, "py_alloc_blocks")].verdict != "leak"
    assert short.verdict != "leak"
    # BUT the same climb kept up for 800 steps (4,000 blocks) is one
    long = judged(800)
    assert long.verdicts[(42, "rss_bytes")].verdict != "leak"
    assert long.verdicts[(42, "py_alloc_blocks")].verdict == "leak"
    assert long.verdict == "leak"


def test_a_count_cleared_once_and_filling_again_is_no_leak_until_it_climbs_past_its_peak() -> None:
    # GIVEN a count of objects read at every step (torch's StorageWeakRef between DataLoader
    # batches): +2 a step from 50 to 122, cleared to 6, then +2 a step again, to 92
    x = np.arange(100.0)
    first = 50.0 + 2.0 * x[:37]
    again = 6.0 + 2.0 * np.arange(44.0)
    y = np.concatenate([first, again])
    xs = np.arange(float(len(y)))
    name = "objects:torch.multiprocessing.reductions.StorageWeakRef"
    v = judge_series(xs, y, "count", DetectOptions(), signal=name)
    # THEN it is a sawtooth with one tooth seen, not a leak from its last drop on
    assert v.verdict != "leak" and v.floor, v.reason
    # BUT the same count that climbs on past where it fell from (to 166) is judged as a line
    past = np.concatenate([first, 6.0 + 2.0 * np.arange(81.0)])
    w = judge_series(np.arange(float(len(past))), past, "count", DetectOptions(), signal=name)
    assert w.verdict == "leak", w.reason
    # AND a start-up that let a quarter of its objects go, then gains +2 a step, is no tooth
    startup = np.concatenate([np.linspace(0.0, 2000.0, 6), 1500.0 + 2.0 * np.arange(60.0)])
    s = judge_series(np.arange(66.0), startup, "count", DetectOptions(), signal=name)
    assert not s.floor and s.verdict == "leak", s.reason
    # AND process memory with one such drop is judged as before (a leak may follow a release)
    m = judge_series(xs, y * 1e6, "bytes", DetectOptions(), signal="rss_bytes")
    assert not m.floor


def _replay_census(
    pairs: List[Any], maxlen: int = 3000, holder: str = "dqn.py:main:replay"
) -> List[CensusEntry]:
    return [
        {
            "step": step,
            "t": step * 0.05,
            "containers": [
                {
                    "holder": holder,
                    "len": length,
                    "maxlen": maxlen,
                    "elem_types": ["__main__.Transition"],
                }
            ],
        }
        for step, length in pairs
    ]


def test_memory_rising_while_a_bounded_deque_fills_waits_for_the_fill() -> None:
    # GIVEN RSS rising +16 KiB a step while a deque(maxlen=3000) fills at one item a step
    # (censuses at steps 25, 100, 400 saw it 25, 100, 400 long), with a little noise
    rng = np.random.default_rng(3)
    steps = np.arange(0, 6000, 10, dtype=float)
    rss = 400e6 + 16384 * np.minimum(steps, 3000) + rng.normal(0, 20e3, len(steps))
    early = _replay_census([(25, 25), (100, 100), (400, 400)])
    mid = _record({"rss_bytes": rss[:200]}, stride=10)  # steps 0..1990: still filling
    mid.processes[0].census.extend(early)
    # THEN no leak while it fills: inconclusive, waiting for the deque
    a = analyze(mid)
    assert a.verdict != "leak"
    assert "deque(maxlen=3000), fills" in a.signals["42"]["rss_bytes"].reason
    # AND once it is full (a census saw it full) the flat memory after the fill decides
    whole = _record({"rss_bytes": rss}, stride=10)
    whole.processes[0].census.extend(early + _replay_census([(4000, 3000)]))
    assert analyze(whole).verdict == "no_leak"
    # AND memory that keeps rising after the fill is a leak
    leak = 400e6 + 16384 * steps + rng.normal(0, 20e3, len(steps))
    still = _record({"rss_bytes": leak}, stride=10)
    still.processes[0].census.extend(early + _replay_census([(4000, 3000)]))
    assert analyze(still).verdict == "leak"
    # AND a container growing outside the deque keeps the memory's leak while it fills
    other = _record({"rss_bytes": rss[:200], "container:main:losses:len": steps[:200]}, stride=10)
    other.processes[0].census.extend(early)
    assert analyze(other).verdict == "leak"
    # AND so does a deque below a container that grows (a handler with its own bounded
    # deque added every epoch: bounded each, unbounded in all)
    many = _record({"rss_bytes": rss[:200]}, stride=10)
    many.processes[0].census.extend(early)
    for k, entry in enumerate(many.processes[0].census):
        entry["containers"] = [
            {"holder": "dqn.py:main:replay", "len": 2 + k, "maxlen": None},
            {
                **cast(Dict[str, Any], entry["containers"][0]),
                "holder": "dqn.py:main:replay[0].lines",
            },
        ]
    assert analyze(many).verdict == "leak"
    # AND so does a deque of numbers filling beside it (an alert log of (turbine, t,
    # residual) records: wild_s/leak_frame_reader_buffer), whose items weigh nothing
    scalars = _record({"rss_bytes": rss[:200]}, stride=10)
    scalars.processes[0].census.extend(_replay_census([(25, 25), (100, 100), (400, 400)]))
    for entry in scalars.processes[0].census:
        box = cast(Dict[str, Any], entry["containers"][0])
        box.update(scalar=True, elem_types=["tuple of numbers"])
    assert analyze(scalars).verdict == "leak"
    # AND so does a chain of objects each keeping the one before, longer at every look
    # (abandoned trace spans linked by `parent`: wild_v/leak_online_pricing_spans)
    chained = _record({"rss_bytes": rss[:200]}, stride=10)
    chained.processes[0].census.extend(_replay_census([(25, 25), (100, 100), (400, 400)]))
    for entry, links in zip(chained.processes[0].census, (8, 12, 48)):
        entry["chains"] = [{"type": "__main__.Span", "holder": "main:span", "links": links}]
    assert analyze(chained).verdict == "leak"
    # BUT not one that stays as long (a step's small tree caught in a local)
    same = _record({"rss_bytes": rss[:200]}, stride=10)
    same.processes[0].census.extend(_replay_census([(25, 25), (100, 100), (400, 400)]))
    for entry in same.processes[0].census:
        entry["chains"] = [{"type": "__main__.Node", "holder": "main:node", "links": 5}]
    assert analyze(same).verdict != "leak"


def test_memory_rising_while_a_bounded_lru_cache_fills_waits_for_the_fill() -> None:
    # GIVEN RSS rising +16 KiB a step while an lru_cache(maxsize=1024) of embeddings fills
    # (the agent reports its maxsize as the cache's bound, like a deque's maxlen)
    rng = np.random.default_rng(4)
    steps = np.arange(0, 2400, 8, dtype=float)
    rss = 300e6 + 16384 * np.minimum(steps, 1024) + rng.normal(0, 20e3, len(steps))
    holder = "__main__.user_embedding.<lru_cache>"
    early = _replay_census([(25, 25), (100, 100), (400, 400)], 1024, holder)
    mid = _record({"rss_bytes": rss[:100]}, stride=8)  # steps 0..792: still filling
    mid.processes[0].census.extend(early)
    # THEN no leak while it fills, said in the user's words
    v = analyze(mid).signals["42"]["rss_bytes"]
    assert v.verdict == "inconclusive"
    assert f"`{holder}`, an lru_cache(maxsize=1024), fills (400 of 1024" in v.reason
    assert v.needed == "the cache to fill, then no more growth"
    # AND once full, the flat memory after the fill decides
    whole = _record({"rss_bytes": rss}, stride=8)
    whole.processes[0].census.extend(early + _replay_census([(1600, 1024)], 1024, holder))
    assert analyze(whole).verdict == "no_leak"
    # AND memory that keeps rising after the cache is full is a leak
    leak = 300e6 + 16384 * steps + rng.normal(0, 20e3, len(steps))
    still = _record({"rss_bytes": leak}, stride=8)
    still.processes[0].census.extend(early + _replay_census([(1600, 1024)], 1024, holder))
    assert analyze(still).verdict == "leak"


def test_closed_figures_waiting_for_the_collector_are_no_leak_while_pyplot_holds_none() -> None:
    # GIVEN a figure drawn and closed every 5 steps: the live Figure count climbs +0.1 a step
    # (closed figures live in reference cycles until a full collection), RSS and heap blocks
    # with it, while pyplot's manager holds at most one open figure
    rng = np.random.default_rng(5)
    steps = np.arange(0, 300, 2, dtype=float)
    figures = 1 + np.floor(steps / 10)
    rss = 380e6 + 80e3 * steps + rng.normal(0, 30e3, len(steps))
    blocks = 9e5 + 600 * steps + rng.normal(0, 200, len(steps))
    is_open = (steps % 10 < 4).astype(float)
    closed = _record(
        {
            "figures:count": figures,
            "figures:open": is_open,
            "rss_bytes": rss,
            "py_alloc_blocks": blocks,
        },
        stride=2,
    )
    # THEN no leak: the figures are closed ones waiting for the collector, and the memory
    # and blocks that rise with them wait too
    a = analyze(closed)
    assert a.verdict != "leak"
    assert "closed figures waiting for the cyclic collector" in (
        a.signals["42"]["figures:count"].reason
    )
    # AND once a full collection has passed (the count fell back) memory still rising is
    # judged on its own
    collected = _record(
        {"figures:count": 1 + np.floor(steps / 10) % 12, "figures:open": is_open, "rss_bytes": rss},
        stride=2,
    )
    assert analyze(collected).verdict == "leak"
    # AND figures pyplot keeps open (never closed) are a leak
    never = _record(
        {"figures:count": figures, "figures:open": figures, "rss_bytes": rss},
        stride=2,
    )
    assert analyze(never).verdict == "leak"


def test_what_a_rise_clear_of_zero_but_not_of_its_noise_needs_is_said_from_that_noise() -> None:
    # GIVEN a slope whose interval is clear of zero, held back by its rise over the noise
    # band (a third of what it must be) or by its trend test (z half of what it must be)
    from memprobe.analysis.wording import more_to_clear

    # THEN the span still needed follows how each grows with the span: not "1 more step"
    assert more_to_clear(3.0, 2.5, 1.0, 3.0, 100.0, "steps") == "about 108 more steps"
    assert more_to_clear(1.25, 2.5, 5.0, 3.0, 100.0, "steps") == "about 300 more steps"
    # AND a band the rise cannot outgrow is said to need a less noisy signal
    assert "less noisy" in more_to_clear(3.0, 2.5, 0.01, 3.0, 100.0, "steps")


def test_memory_climbing_over_a_second_of_fast_steps_waits_for_two_seconds() -> None:
    # GIVEN RSS climbing +4.7 MiB a step over the first 44 steps of 23 ms (a vocabulary
    # memoised by the first batches: 1 s of the run), a little noise
    rng = np.random.default_rng(11)
    steps = np.arange(1.0, 45.0)
    rss = 300e6 + 4.7 * 2**20 * steps + rng.normal(0, 200e3, len(steps))
    fast = judge_series(steps, rss, "bytes", t=5.6 + 0.023 * steps, signal="rss_bytes")
    # THEN it is too short yet, and says it needs seconds, not steps
    assert fast.verdict == "inconclusive" and fast.reason.startswith("too short"), fast.reason
    assert fast.needed is not None and "second" in fast.needed
    # AND the same climb over 3 s (steps of 70 ms) is a leak
    slow = judge_series(steps, rss, "bytes", t=5.6 + 0.07 * steps, signal="rss_bytes")
    assert slow.verdict == "leak", slow.reason
    # AND a container gaining one item a step over one second (100 steps of 10 ms) is
    # judged on its steps, as before
    many = np.arange(1.0, 101.0)
    box = judge_series(many, many, "count", t=5.6 + 0.01 * many, signal="container:main:losses:len")
    assert box.verdict == "leak", box.reason


# a dict's length sampled every 0.1 s on a busy machine during an evaluation phase, with the
# machine's own pauses (0.6 s gaps): 28 samples, never falling (a memo that never hits)
_UNEVEN_T = [16.07, 16.7, 16.8, 16.91, 17.0, 17.11, 17.72, 17.82, 17.92, 18.02, 18.13, 18.23]
_UNEVEN_T += [18.33, 18.43, 18.53, 18.63, 18.73, 18.83, 18.93, 19.04, 19.14, 19.24, 19.34]
_UNEVEN_T += [19.44, 19.7, 19.8, 19.9, 20.0]
_UNEVEN_N = [2412, 2619, 2765, 2925, 3052, 3241, 3416, 3557, 3727, 3899, 4065, 4219, 4350]
_UNEVEN_N += [4503, 4663, 4796, 4931, 5067, 5182, 5324, 5463, 5613, 5757, 5910, 5981, 6118]
_UNEVEN_N += [6273, 6400]


def test_a_container_climbing_unevenly_over_two_dozen_samples_is_a_steady_rise() -> None:
    from memprobe.analysis.trend import steady_rise

    t, n = np.array(_UNEVEN_T), np.array(_UNEVEN_N, dtype=float)
    # WHEN the steady-rise test looks at it as an exact count, and as a measured level
    # THEN as a count it is a steady rise (one point per block: a count has no noise to
    # outvote); as a level, 28 points are too few blocks to say
    assert steady_rise(t, n, exact=True) is not None
    assert steady_rise(t, n) is None
    # AND judged on the clock as the phase after a run's last step is (the short span
    # that something accumulating there allows) with a run's false-alarm budget, the length
    # is a leak, though its pauses keep it from clearing the noise-band test
    after = replace(DetectOptions(), min_span_seconds=DetectOptions().min_span_seconds_backed)
    name = "container:__main__.predictor.memo:len"
    v = judge_series(t, n, "count", after, axis="time", signal=name, n_tests=80)
    assert v.verdict == "leak" and v.steady
    # BUT the same rise in bytes (RSS, noisy by nature) is not a steady rise on 28 points
    level = 4e8 + 2e4 * n
    rss = judge_series(t, level, "bytes", after, axis="time", signal="rss_bytes", n_tests=80)
    assert not rss.steady
    # AND a count that fills and then falls back (a per-epoch list rebuilt) is no steady rise
    sawtooth = np.concatenate([n[:20], n[20:] - 3000.0])
    assert steady_rise(t, sawtooth, exact=True) is None
    # AND neither is a fill that slows down as it goes (a vocabulary meeting fewer new words)
    slowing = 6400.0 * (1.0 - np.exp(-(t - t[0]) / 1.2))
    assert steady_rise(t, slowing, exact=True) is None


def test_a_tensor_count_held_back_keeps_backing_heap_blocks_as_a_growing_count_would() -> None:
    from memprobe.analysis.evidence import corroborate
    from memprobe.analysis.verdict import SignalVerdict

    # GIVEN heap blocks leaking, and a tensor count whose interval is clear of zero (+16/step)
    # with no graph or memory growing with it: once merely "growing", once a leak by the
    # steady-rise test alone (model snapshots' tensors, uneven on a busy machine)
    blocks = SignalVerdict("leak", "count", "step", "heap", "grows +137/step", 29, growing=True)
    kw: Dict[str, Any] = {"slope": 16.0, "ci_low": 14.8, "ci_high": 18.8, "growing": True}
    growing = SignalVerdict("inconclusive", "count", "step", "object", "not clear", 29, **kw)
    steady = SignalVerdict("leak", "count", "step", "object", "steadily", 29, steady=True, **kw)
    for tensors in (growing, steady):
        out = corroborate({"py_alloc_blocks": blocks, "tensors:count": tensors})
        # THEN the count is no leak on its own, and the heap blocks keep its backing
        assert out["tensors:count"].verdict == "inconclusive"
        assert out["py_alloc_blocks"].verdict == "leak"
    # BUT a tensor count that leaks by the regular test alone backs nothing (as before)
    regular = replace(steady, steady=False)
    out = corroborate({"py_alloc_blocks": blocks, "tensors:count": regular})
    assert out["py_alloc_blocks"].verdict == "inconclusive"


def test_a_tensor_count_whose_items_grew_is_no_leak_while_memory_is_judged_flat() -> None:
    from memprobe.analysis.evidence import corroborate
    from memprobe.analysis.verdict import SignalVerdict

    # GIVEN a tensor count rising +0.2 a step (one more exemplar set per new class) whose
    # watched container's items grew by bytes that count over the run (the exemplar memory
    # filled to its budget early on), and the process' memory judged flat over the window
    kw: Dict[str, Any] = {"slope": 0.2, "ci_low": 0.18, "ci_high": 0.22, "growing": True}
    tensors = SignalVerdict("leak", "count", "step", "object", "grows +0.2/step", 170, **kw)
    flat = {
        name: SignalVerdict("no_leak", "bytes", "step", "memory", "no growth", 94)
        for name in ("rss_bytes", "uss_bytes", "pss_bytes")
    }
    out = corroborate({"tensors:count": tensors, **flat}, heavy_items=True)
    # THEN the count alone is no leak
    assert out["tensors:count"].verdict == "inconclusive"
    # BUT while memory is not judged flat, the heavy items back it (as before)
    rising = {n: replace(v, verdict="inconclusive") for n, v in flat.items()}
    out = corroborate({"tensors:count": tensors, **rising}, heavy_items=True)
    assert out["tensors:count"].verdict == "leak"


def test_a_light_tensor_count_backs_no_heap_blocks_while_memory_is_judged_flat() -> None:
    from memprobe.analysis.evidence import corroborate
    from memprobe.analysis.verdict import SignalVerdict

    # GIVEN heap blocks rising +122/s (2,200 blocks over a run), the count of tensors in
    # flight drifting up with them (+0.2 .. +1.5/s: an attack's iterates read at random
    # moments of its loop, wild_n/ok_sign_pgd_robustness), no graph or tensor bytes growing,
    # and the process' memory judged flat
    blocks = SignalVerdict("leak", "count", "time", "heap", "grows +122/s", 280, growing=True)
    kw: Dict[str, Any] = {"slope": 0.88, "ci_low": 0.2, "ci_high": 1.54, "growing": True}
    tensors = SignalVerdict("inconclusive", "count", "time", "object", "not clear", 166, **kw)
    flat = {
        name: SignalVerdict("no_leak", "bytes", "time", "memory", "no growth", 280)
        for name in ("rss_bytes", "uss_bytes", "pss_bytes")
    }
    out = corroborate({"py_alloc_blocks": blocks, "tensors:count": tensors, **flat})
    # THEN the blocks have no backing: not a leak
    assert out["py_alloc_blocks"].verdict == "inconclusive"
    # BUT the same count backs them while memory is not judged flat (it may be rising)
    rising = {n: replace(v, verdict="inconclusive") for n, v in flat.items()}
    out = corroborate({"py_alloc_blocks": blocks, "tensors:count": tensors, **rising})
    assert out["py_alloc_blocks"].verdict == "leak"
    # AND so does a count of tensors that hold graphs growing with them
    graphs = replace(tensors, slope=3.0, ci_low=2.0, ci_high=4.0)
    out = corroborate(
        {"py_alloc_blocks": blocks, "tensors:count": tensors, "graph:nodes": graphs, **flat}
    )
    assert out["py_alloc_blocks"].verdict == "leak"


def test_a_count_let_go_as_the_program_ends_is_judged_without_that_drop() -> None:
    # GIVEN a container that gains one item every 0.1 s for 17 s and is emptied in the last
    # sample (a `with ExitStack()` in main() closing as the program finishes)
    t = np.arange(0.0, 17.0, 0.1)
    y = np.floor(t * 20.0)
    y[-1] = 0.0
    signal = "container:t.py:main:stack._exit_callbacks:len"
    # THEN, the process having ended, it is the climb it was the whole run
    ended = judge_series(t, y, "count", axis="time", t=t, signal=signal, ended=True)
    assert ended.verdict == "leak", ended.reason
    # AND while the run still goes (the live table, a cut) that drop may be a clear that a
    # refill follows: no leak is claimed on it
    going = judge_series(t, y, "count", axis="time", t=t, signal=signal)
    assert going.verdict != "leak"
    # AND a series that was cleared before, too, is a sawtooth whatever its end
    saw = np.tile(np.arange(30.0), 6)[: len(t)]
    saw[-1] = 0.0
    v = judge_series(t, saw, "count", axis="time", t=t, signal=signal, ended=True)
    assert v.verdict != "leak", v.reason


def test_a_container_that_grew_then_was_let_go_is_no_leak() -> None:
    # GIVEN a float cache growing 32 items a step for its first 150 steps, its series ending
    # there (the agent found it no more), RSS flat afterwards, over 400 steps in all
    name = "container:cache.py:main:ds._float_cache:len"
    rss = np.full(400, 500e6)
    rec = _record({"rss_bytes": rss})
    cache = Series(
        step=list(range(150)),
        t=[i * 0.05 for i in range(150)],
        value=[32.0 * i for i in range(150)],
    )
    listed = [{"holder": "cache.py:main:ds._float_cache", "len": 800}]

    def with_census(later: List[Dict[str, Any]]) -> RunRecord:
        census: List[CensusEntry] = [
            {"step": 25, "t": 1.25, "containers": cast(List[Any], listed)},
            {"step": 300, "t": 15.0, "containers": cast(List[Any], later)},
        ]
        proc = replace(
            rec.processes[0], series={**rec.processes[0].series, name: cache}, census=census
        )
        return replace(rec, processes=[proc])

    # WHEN the census after its series ended did not find it
    gone = analyze(with_census([]))
    # THEN its growth is no leak, and the run is not called one for it
    v = gone.verdicts[(42, name)]
    assert v.verdict == "no_leak" and "let go" in v.reason
    assert gone.verdict != "leak"
    # AND while a later census still lists it, it is judged on its growth as before
    kept = analyze(with_census(listed))
    assert kept.verdicts[(42, name)].verdict != "no_leak"


def test_memory_that_grew_by_what_counts_too_fast_to_judge_keeps_the_run_from_no_leak() -> None:
    # GIVEN 800 fast steps (1.5 ms: 1.2 s of clock) of RSS climbing 100 KiB a step, beside
    # heap blocks and a tensor count judged flat (a `total_loss += loss` chain on a fast
    # machine: too short a clock to tell a leak from the first steps filling caches)
    steps = np.arange(800.0)
    rng = np.random.default_rng(2)
    rss = 300e6 + 100 * 1024 * steps + rng.normal(0, 50e3, len(steps))
    flat = np.full(800, 5000.0)
    a = analyze(
        _record({"rss_bytes": rss, "py_alloc_blocks": flat, "tensors:count": flat}, dt=0.0015)
    )
    # THEN the memory waits for more clock, and the run is not called "no leak" meanwhile
    v = a.verdicts[(42, "rss_bytes")]
    assert v.verdict == "inconclusive" and v.needed is not None and "seconds" in v.needed
    assert a.verdict == "inconclusive"
