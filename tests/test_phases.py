"""The phase after a process' last step (analysis/phases.py): judged on seconds."""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, List, Optional, Tuple

import numpy as np

from memprobe.analysis import analyze
from memprobe.analysis.census_growth import items_bytes_rate
from memprobe.analysis.phases import census_after_steps, stepless_tail
from memprobe.analysis.series import Prepared
from memprobe.record import CensusEntry, ExitInfo, Limits, Process, RunRecord, Series

MIB = 2**20


def _two_phases(
    train_steps: int,
    after_s: float,
    after_mib_per_s: float,
    noise_mib: float = 0.3,
    seed: int = 0,
) -> RunRecord:
    """``train_steps`` steps sampled every 0.05 s with flat memory, then ``after_s`` seconds
    sampled on time (no steps) whose RSS rises by ``after_mib_per_s``."""
    rng = np.random.default_rng(seed)
    steps: List[Optional[int]] = []
    t: List[float] = []
    rss: List[float] = []
    base = 300 * MIB
    for i in range(train_steps):
        steps.append(i + 1)
        t.append(1.0 + 0.05 * i)
        rss.append(base + rng.normal(0, noise_mib * MIB))
    t_stop = t[-1]
    k = 0
    while 0.1 * k < after_s:
        steps.append(None)
        t.append(t_stop + 1.2 + 0.1 * k)
        grown = after_mib_per_s * MIB * 0.1 * k
        rss.append(base + grown + rng.normal(0, noise_mib * MIB))
        k += 1
    series = {"rss_bytes": Series(step=steps, t=t, value=rss)}
    return _one_process(Process(pid=7, role="main", steps=train_steps, series=series), "step")


def _one_process(proc: Process, x_axis: str) -> RunRecord:
    """A run record of one process, 16 GiB of RAM, ending with the process' last sample."""
    return RunRecord(
        command=["train.py"],
        cwd="/",
        started_at=0.0,
        duration_s=max(t for s in proc.series.values() for t in s.t),
        exit=ExitInfo(code=0),
        limits=Limits(ram_bytes=16 * 2**30, ram_source="machine"),
        x_axis=x_axis,
        processes=[proc],
    )


def test_a_leak_after_the_last_step_is_a_leak_on_seconds() -> None:
    # GIVEN 400 flat training steps, then 14 s without steps in which RSS climbs 20 MiB/s
    record = _two_phases(400, 14.0, 20.0)
    # WHEN analysed
    result = analyze(record)
    # THEN the run leaks, on the seconds axis of the phase after the steps
    assert result.verdict == "leak"
    v = result.verdicts[(7, "rss_bytes")]
    assert v.verdict == "leak" and v.axis == "time"
    assert "after the last step" in v.reason
    assert v.slope_per_s is not None and 15 * MIB < v.slope_per_s < 25 * MIB


def test_a_flat_phase_after_the_steps_changes_nothing() -> None:
    # GIVEN the same run whose phase after the steps stays flat
    record = _two_phases(400, 14.0, 0.0)
    # THEN no leak, and the step-axis verdict stands
    result = analyze(record)
    assert result.verdict == "no_leak"
    assert result.verdicts[(7, "rss_bytes")].axis == "step"


def test_growth_after_the_steps_keeps_the_run_from_no_leak_while_unclear() -> None:
    # GIVEN a short phase after the steps (4 s: below the 10 s memory needs on seconds
    # when nothing is seen accumulating) in which RSS climbs
    record = _two_phases(400, 4.0, 20.0)
    result = analyze(record)
    # THEN the run is not called "no leak"
    assert result.verdict != "no_leak"


def test_a_series_of_the_phase_after_the_steps_alone_is_judged_there() -> None:
    # GIVEN flat training steps, then 14 s without steps in which a list of observers first
    # appears and gains one item every 0.2 s (wild_z/leak_eval_observers: evaluators
    # subscribed to an event bus and never unsubscribed), no point of it on a step
    record = _two_phases(400, 14.0, 0.0)
    proc = record.processes[0]
    t_after = [
        t for t, st in zip(proc.series["rss_bytes"].t, proc.series["rss_bytes"].step) if st is None
    ]
    name = "container:__main__.BUS._subs['batch_end']:len"
    proc.series[name] = Series(
        step=[None] * len(t_after),
        t=t_after,
        value=[10.0 + 5.0 * i * 0.1 for i in range(len(t_after))],
    )
    # WHEN analysed
    v = analyze(record).verdicts[(7, name)]
    # THEN its verdict is the phase's, on seconds (the steps had no point of it to judge)
    assert v.axis == "time" and v.n > 100, v
    assert v.verdict != "inconclusive" or "only" not in v.reason, v


def test_a_phase_too_short_to_judge_is_left_alone() -> None:
    # GIVEN a second of sampling after the steps (the program's exit)
    record = _two_phases(400, 1.0, 50.0)
    # THEN there is no phase to judge
    assert stepless_tail(record.processes[0], 2.0) is None
    assert analyze(record).verdicts[(7, "rss_bytes")].axis == "step"


def test_the_phase_starts_at_the_agents_own_last_step() -> None:
    # GIVEN outside samples (USS) that the parent stamped with the last step during the
    # phase, as older parents did
    record = _two_phases(400, 6.0, 10.0)
    proc = record.processes[0]
    rss = proc.series["rss_bytes"]
    uss_t = list(rss.t[::5])
    proc.series["uss_bytes"] = Series(
        step=[400] * len(uss_t), t=uss_t, value=[200.0 * MIB] * len(uss_t)
    )
    # THEN the phase still begins after the agent's last step-tagged sample
    tail = stepless_tail(proc, 2.0)
    assert tail is not None
    t_stop, after = tail
    assert abs(t_stop - (1.0 + 0.05 * 399)) < 1e-9
    assert all(s is None for s in after.series["rss_bytes"].step)


def test_censuses_after_the_steps() -> None:
    record = _two_phases(400, 6.0, 10.0)
    census: List[CensusEntry] = [
        {"step": 5, "t": 1.2, "types": {}},
        {"step": None, "t": 23.0, "types": {}},
    ]
    proc = replace(record.processes[0], census=census)
    assert census_after_steps(proc) is None  # one is no growth
    proc = replace(proc, census=[*census, {"step": None, "t": 25.0, "types": {}}])
    after = census_after_steps(proc)
    assert after is not None and [c["t"] for c in after] == [23.0, 25.0]


def _lengths(xs: List[float], ys: List[float]) -> Dict[str, Prepared]:
    x = np.asarray(xs, dtype=float)
    return {
        "container:main:memory:len": Prepared(x=x, y=np.asarray(ys, dtype=float), t=x, axis="step")
    }


def test_item_bytes_follow_the_dense_length_between_censuses() -> None:
    # GIVEN two censuses 375 steps apart that measured a list's items at 1,300 B each
    # (+490 KB: under the 1 MiB that counts) and its length read at every sample since
    census = [
        {"step": 25, "containers": [{"holder": "main:memory", "len": 500, "bytes": 650_000}]},
        {"step": 400, "containers": [{"holder": "main:memory", "len": 875, "bytes": 1_137_500}]},
    ]
    rate0, grown0 = items_bytes_rate(census, "step")
    assert grown0 < MIB
    # WHEN the dense length says 2,000 items by step 1,525
    pts: Tuple[List[float], List[float]] = ([25.0, 400.0, 1525.0], [500.0, 875.0, 2000.0])
    rate, grown = items_bytes_rate(census, "step", _lengths(*pts))
    # THEN the items' bytes are known to have grown by ~1.9 MB at ~1.3 KB/step
    assert 1.8e6 < grown < 2.0e6
    assert 1200 < rate < 1400
    assert rate0 > 0


def _no_steps(seconds: float, mib_per_s: float, seed: int = 0) -> RunRecord:
    """A process without a step yet, sampled every 0.1 s while its RSS climbs."""
    rng = np.random.default_rng(seed)
    t = [0.4 + 0.1 * k for k in range(int(seconds * 10))]
    rss = [20 * MIB + mib_per_s * MIB * (x - 0.4) + rng.normal(0, 0.3 * MIB) for x in t]
    series = {"rss_bytes": Series(step=[None] * len(t), t=t, value=rss)}
    return _one_process(Process(pid=7, role="main", series=series), "time")


def test_a_steep_climb_before_any_step_waits_for_the_full_span() -> None:
    # GIVEN 6 s of a process that has not stepped yet, its RSS climbing 40 MiB/s with
    # nothing counted growing beside it: torch imported, a dataset and a model built on a
    # busy machine (15 correct corpus scripts looked like this at some cut, busy)
    early = analyze(_no_steps(6.0, 40.0))
    # THEN it is not called a leak yet (a phase after the steps would be: see below)
    assert early.verdicts[(7, "rss_bytes")].verdict == "inconclusive"
    assert early.verdict != "leak"
    # BUT the same climb kept up for 12 s is one
    assert analyze(_no_steps(12.0, 40.0)).verdict == "leak"
    # AND 6 s of it after 400 steps (an evaluation memoizing every output) is one too
    after = analyze(_two_phases(400, 6.0, 40.0))
    assert after.verdict == "leak"
    assert "after the last step" in after.verdicts[(7, "rss_bytes")].reason


def test_the_censuses_pauses_are_taken_out_of_the_seconds() -> None:
    from memprobe.analysis.phases import program_clock

    # GIVEN a program without steps that registers 860 objects a second (a finalizer
    # registry: wild_j/leak_finalize_bound_method) for 2.9 s of its own time, RSS rising
    # with them, sampled every 0.05 s; a census 1 s in stops it for 0.3 s, during which
    # nothing is sampled and nothing grows but the parent reads USS once
    rng = np.random.default_rng(5)
    own = np.arange(0.0, 2.9, 0.05)
    wall = own + np.where(own > 1.0, 0.3, 0.0) + 4.0
    count = 1000 + 860 * own + rng.normal(0, 2, len(own))
    rss = 400 * MIB + 120 * MIB * own + rng.normal(0, 0.5 * MIB, len(own))
    census: List[CensusEntry] = [{"t": 5.0, "duration_s": 0.3}]
    none: List[Optional[int]] = [None] * len(own)
    series = {
        "rss_bytes": Series(step=list(none), t=wall.tolist(), value=rss.tolist()),
        "container:weakref.finalize._registry:len": Series(
            step=list(none), t=wall.tolist(), value=count.round().tolist()
        ),
        "uss_bytes": Series(step=[None], t=[5.2], value=[450 * MIB]),
    }
    proc = Process(pid=7, role="main", ended="exit", series=series, census=census)
    # WHEN its times are put on its own clock
    moved = program_clock(proc)
    # THEN a time after the census loses its pause, a read during it lands at its start,
    # and the census stays where it began
    assert abs(moved.series["rss_bytes"].t[-1] - (wall[-1] - 0.3)) < 1e-9
    assert moved.series["uss_bytes"].t == [5.0]
    assert [c["t"] for c in moved.census] == [5.0]
    # AND judged on it, the registry's climb is one straight line over the 2.9 s: a leak
    # (on the wall clock the line steps sideways at the census, and the warm-up search cut
    # the run there, leaving 1.6 s: too short)
    result = analyze(_one_process(proc, "time"))
    assert result.verdicts[(7, "container:weakref.finalize._registry:len")].verdict == "leak"


def _chain_then_teardown(fall_at_s: float, ended: Optional[str], until: float = 3.8) -> Process:
    """A program without steps that feeds an RNN its own hidden state (pytorch#2198) from
    1.6 s of its own time (after its imports) until ``until``, sampled every 0.05 s: 22,000
    tensors a second, RSS rising 750 MiB/s; from ``fall_at_s`` the chain is taken apart
    (its main function returned): the count falls to a fifth in its last samples, RSS
    stays."""
    rng = np.random.default_rng(3)
    t = np.arange(1.6, until, 0.05)
    count = 9000 + 22000 * (t - 1.6) + rng.normal(0, 40, len(t))
    rss = 230 * MIB + 750 * MIB * (t - 1.6) + rng.normal(0, 2 * MIB, len(t))
    top = float(count[t < fall_at_s][-1])
    falling = t >= fall_at_s
    count[falling] = top * np.linspace(0.8, 0.2, int(falling.sum()))
    rss[falling] = rss[~falling][-1]
    none: List[Optional[int]] = [None] * len(t)
    series = {
        "rss_bytes": Series(step=list(none), t=t.tolist(), value=rss.tolist()),
        "tensors:count": Series(step=list(none), t=t.tolist(), value=count.round().tolist()),
    }
    return Process(pid=7, role="main", ended=ended, series=series)


def test_the_fall_of_a_program_taking_itself_apart_is_not_part_of_its_run() -> None:
    from memprobe.analysis.phases import without_teardown

    # GIVEN the RNN chain that ended, its last 0.2 s the chain taken apart
    ended = _chain_then_teardown(3.6, "exit")
    # WHEN the teardown is cut
    cut = without_teardown(ended)
    # THEN the count ends at its highest, the RSS (which never fell) keeps every sample
    count = cut.series["tensors:count"].value
    assert count[-1] == max(count) and len(count) < len(ended.series["tensors:count"].value)
    assert cut.series["rss_bytes"] == ended.series["rss_bytes"]
    # AND the run is a leak on the count and the memory beside it (before the cut the count
    # was "not clear of its noise" and the run inconclusive)
    result = analyze(_one_process(ended, "time"))
    assert result.verdicts[(7, "tensors:count")].verdict == "leak"
    assert result.verdict == "leak"


def test_a_fall_that_is_not_the_end_stays() -> None:
    from memprobe.analysis.phases import without_teardown

    # GIVEN the same fall in a process still running, and in one that ended but whose fall
    # came over a second before its last sample (the program let go and went on)
    running = _chain_then_teardown(3.6, None)
    let_go = _chain_then_teardown(2.6, "exit")
    # THEN neither loses a sample
    assert without_teardown(running) == running
    assert without_teardown(let_go) == let_go


def test_a_program_that_ended_climbing_steeply_needs_half_the_span() -> None:
    # GIVEN the chain for 1.8 s of its own time, the last 0.2 s its teardown: a fast
    # machine runs pytorch#2198's 20,000 chunks in that (its count seen from the first
    # census on, 0.5 s into the loop)
    short = _chain_then_teardown(3.2, "exit", until=3.4)
    # THEN, ended, its climb is no start-up: growth 20 times what counts needs half the
    # two seconds, and the run is a leak
    assert analyze(_one_process(short, "time")).verdict == "leak"
    # BUT the same samples from a program still running may be its start-up: not yet
    running = _chain_then_teardown(3.5, None, until=3.4)
    assert analyze(_one_process(running, "time")).verdict != "leak"
