"""Long runs on the parent side: bounded memory, bounded records, the same verdicts.

A day-long run sends the parent millions of samples and tens of thousands of censuses. The
run state keeps each series as floor/peak buckets (``SeriesBuf``) and a thinned census list
(``CensusBuf``), and a record is a few MB whatever the run's length; nothing of this may
change a verdict. Synthetic data only: fast.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Dict, List, Tuple, cast

import pytest

from memprobe.analysis import analyze
from memprobe.analysis.census_build import build_profile
from memprobe.analysis.culprit_make import user_location
from memprobe.collect.assemble import RECORD_CENSUS, RECORD_POINTS, build_record
from memprobe.collect.censusbuf import CENSUS_HEAD, MAX_CENSUS, CensusBuf, thin_census
from memprobe.collect.process import ProcState
from memprobe.collect.rebuild import rebuild
from memprobe.collect.seriesbuf import BUFFER_BUCKETS, MAX_POINTS, SeriesBuf
from memprobe.collect.state import RunState
from memprobe.record import ExitInfo

T0 = 1_700_000_000.0


def _noise(n: int, seed: int = 0) -> List[float]:
    rng = random.Random(seed)
    return [1e8 + rng.uniform(-1e6, 1e6) for _ in range(n)]


def test_series_buffer_is_bounded_and_keeps_floors_peaks_first_and_last() -> None:
    # GIVEN 200,000 noisy samples with a few far-apart spikes and dips
    values = _noise(200_000)
    spikes = {20_000: 5e8, 90_000: 4e8, 150_000: 3e8}
    dips = {40_000: 1e6, 120_000: 2e6, 199_990: 3e6}
    for i, v in {**spikes, **dips}.items():
        values[i] = v
    buf = SeriesBuf()
    # WHEN they go through the buffer
    for i, v in enumerate(values):
        buf.add(i, 0.01 * i, v)
    # every sample went in with its step: none is None
    steps, ts, vs = cast(Tuple[List[int], List[float], List[float]], buf.points())
    # THEN it holds at most MAX_POINTS points (2 per bucket), every one a real sample in time
    # order, each spike and dip at its own step, and the first and last samples on the side
    assert len(buf) == 200_000
    assert len(vs) <= MAX_POINTS and BUFFER_BUCKETS * 2 <= MAX_POINTS
    assert steps == sorted(steps)
    assert all(values[s] == v for s, v in zip(steps, vs))
    for i, v in {**spikes, **dips}.items():
        assert (i, v) in set(zip(steps, vs))
    assert min(vs) == min(values) and max(vs) == max(values)
    assert buf.first == (0, 0.0, values[0]) and buf.last == (199_999, 0.01 * 199_999, values[-1])


def test_series_buffer_without_cap_keeps_everything_and_record_series_are_compact() -> None:
    buf = SeriesBuf(None)
    for i in range(10_000):
        buf.add(i if i % 2 else None, 0.1 * i + 1e-7, float(4096 * i))
    assert buf.points()[2] == [float(4096 * i) for i in range(10_000)]
    s = buf.series(max_points=1000)
    # times to the millisecond, whole values as integers: a smaller run.json
    assert len(s.value) <= 1000
    assert all(isinstance(v, int) for v in s.value)
    assert all(t == round(t, 3) for t in s.t)
    # a step too large for the array is no step at all (a hostile line), never a crash
    buf.add(1 << 70, 1.0, 1.0)
    assert buf.last == (None, 1.0, 1.0)


def _run(n_steps: int, leak_per_step: float, full: bool, seed: int = 1) -> RunState:
    """A main process at 10 samples a step... a long run in miniature: RSS (noisy, with or
    without a leak from the middle), a count that grows then is cleared, outside USS."""
    rng = random.Random(seed)
    state = RunState(
        command=["python", "t.py"], cwd="/", started_at=T0, max_points=None if full else 4000
    )
    state.ingest(10, {"k": "header", "pid": 10, "ppid": 1, "argv": ["t.py"], "wall_t0": T0})
    half = n_steps // 2
    for step in range(1, n_steps + 1):
        t = 0.05 * step
        rss = 5e8 + rng.uniform(-2e6, 2e6) + (leak_per_step * (step - half) if step > half else 0)
        buffer = step if step < n_steps // 4 else 10  # grows, then cleared: comes and goes
        v = {"rss_bytes": rss, "container:x.buf:len": buffer, "tensors:count": 40}
        state.ingest(10, {"k": "sample", "t": t, "step": step, "v": v})
        if step % 5 == 0:
            state.ingest_outside(10, t, {"rss_bytes": rss, "uss_bytes": 0.8 * rss})
    return state


@pytest.mark.parametrize("leak", [0.0, 8192.0], ids=["no-leak", "leak"])
def test_down_sampled_record_has_the_verdicts_of_the_full_one(leak: float) -> None:
    # GIVEN the same 40,000-step run held bounded (the default) and at full resolution
    bounded = build_record(_run(40_000, leak, full=False), ExitInfo(code=0), 2000.0)
    full = build_record(_run(40_000, leak, full=True), ExitInfo(code=0), 2000.0)
    assert max(len(s.value) for s in full.processes[0].series.values()) == 40_000
    assert max(len(s.value) for s in bounded.processes[0].series.values()) <= MAX_POINTS
    # WHEN both are judged
    a, b = analyze(bounded), analyze(full)
    # THEN every signal gets the same verdict, and so does the run
    va = {k: v.verdict for k, v in a.verdicts.items()}
    vb = {k: v.verdict for k, v in b.verdicts.items()}
    assert va == vb
    assert a.verdict == b.verdict == ("leak" if leak else "no_leak")


def _census(seq: int, step: int, grow: Dict[str, int], hist: int) -> Dict[str, Any]:
    return {
        "k": "census",
        "t": float(step),
        "step": step,
        "seq": seq,
        "v": {"container:__main__.hist:len": hist},
        "types": {"dict": {"count": 1000 + seq}, "torch.Tensor": {"count": hist}},
        "growing_types": [{"type": k, "count": 0, "delta": d} for k, d in grow.items()],
        "containers": [
            {"holder": "__main__.hist", "type": "list", "len": hist, "first_len": 0,
             "elem_types": ["torch.Tensor"], "chain": ["__main__", ".hist"]}
        ],
    }  # fmt: skip


def test_census_buffer_is_bounded_and_keeps_what_the_culprit_needs() -> None:
    # GIVEN 5,000 censuses of a list gaining a tensor a step, every one reporting growth,
    # and a tracemalloc window now and then
    state = RunState(command=["x"], cwd="/", started_at=T0)
    full = RunState(command=["x"], cwd="/", started_at=T0, max_points=None)
    for s in (state, full):
        s.ingest(10, {"k": "header", "pid": 10, "ppid": 1, "wall_t0": T0})
    for i in range(5000):
        msg = _census(i + 1, 10 * (i + 1), {"torch.Tensor": 10, "dict": 1 + i % 3}, 10 * i)
        if i % 500 == 250:
            msg["tracemalloc"] = {"top": [{"line": f"t.py:{i}", "size": 10, "user": True}]}
        for s in (state, full):
            s.ingest(10, msg)
            s.ingest(
                10, {"k": "sample", "t": float(i), "step": 10 * (i + 1), "v": {"rss_bytes": 1e8}}
            )
    # WHEN the records are built
    kept = build_record(state, ExitInfo(code=0), 5e4).processes[0].census
    every = build_record(full, ExitInfo(code=0), 5e4).processes[0].census
    # THEN the bounded one holds at most MAX_CENSUS full censuses: the first ones, the last,
    # and every tracemalloc window
    cens = [c for c in kept if "types" in c]
    assert len(every) == 5000 and len(cens) <= MAX_CENSUS
    assert [c["seq"] for c in cens[:CENSUS_HEAD]] == list(range(1, CENSUS_HEAD + 1))
    assert cens[-1]["seq"] == 5000
    assert sum(1 for c in kept if "tracemalloc" in c) == 10
    assert [c["t"] for c in kept] == sorted(c["t"] for c in kept)
    # and the culprit reads the same: growth, holder, top type, windows
    pk, pf = build_profile(kept), build_profile(every)
    assert pk.top_type() == pf.top_type() == "torch.Tensor"
    ck, cf = pk.top_container(), pf.top_container()
    assert ck is not None and cf is not None
    assert ck.holder == cf.holder == "__main__.hist"
    assert ck.per_step == pytest.approx(cf.per_step, rel=0.01)
    assert pk.growth("tensors:count") == pf.growth("tensors:count")
    assert user_location(pk) == user_location(pf)


def test_thinning_folds_the_growth_of_dropped_censuses_into_the_next_kept_one() -> None:
    entries = [
        {"t": float(i), "types": {}, "growing_types": [{"type": "A", "delta": 1}]}
        for i in range(100)
    ]
    kept, windows = thin_census(entries, 20)
    assert len(kept) <= 20 and kept[-1]["t"] == 99.0
    total = sum(g["delta"] for c in kept[1:] for g in c["growing_types"])
    assert total == 99  # what grew after the first census, all of it
    assert windows == []
    assert entries[50]["growing_types"] == [{"type": "A", "delta": 1}]  # never changed in place


@pytest.mark.slow  # statistical sweep: in CI, out of the fast loop
def test_a_record_of_many_series_stays_within_the_record_budget() -> None:
    # GIVEN 64 processes with 6 series of 5,000 samples each
    state = RunState(command=["x"], cwd="/", started_at=T0)
    for pid in range(100, 164):
        state.ingest(pid, {"k": "header", "pid": pid, "ppid": 1, "wall_t0": T0})
        for i in range(5000):
            v = {f"s{k}": float(i + k) for k in range(6)}
            state.ingest(pid, {"k": "sample", "t": 0.1 * i, "step": i, "v": v})
    record = build_record(state, ExitInfo(code=0), 500.0)
    # THEN all points together stay under the record's budget (a few MB of JSON)
    points = sum(len(s.value) for p in record.processes for s in p.series.values())
    assert points <= RECORD_POINTS
    assert len(json.dumps(record.to_json())) < 8 * 2**20
    assert RECORD_CENSUS >= MAX_CENSUS


def test_step_rate_comes_from_the_last_seconds() -> None:
    p = ProcState(pid=1)
    for i in range(1000):  # 10 steps/s for 50 s, then 100 steps/s
        t = 0.1 * i if i < 500 else 50 + 0.01 * (i - 500)
        step = i if i < 500 else 500 + 10 * (i - 500)
        p.add("rss_bytes", step, t, 1.0)
    assert p.step_rate() == pytest.approx(1000.0, rel=0.05)
    assert ProcState(pid=2).step_rate() is None


def _write(path: Path, msgs: List[Dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(m) + "\n" for m in msgs))


def test_rebuild_stamps_outside_samples_with_the_step_of_their_moment(tmp_path: Path) -> None:
    # GIVEN a run folder: main steps 1..100 at 10 steps/s, the parent sampled USS at 2 s
    run_dir = tmp_path / "r.run"
    run_dir.mkdir()
    _write(
        run_dir / "parent.jsonl",
        [
            {"k": "meta", "command": ["t.py"], "cwd": "/", "started_at": T0},
            {"k": "outside", "pid": 10, "ppid": 1, "t": 2.0, "v": {"uss_bytes": 5e7}},
            {"k": "exit", "code": 0, "duration_s": 10.0},
        ],
    )
    _write(
        run_dir / "proc-10.jsonl",
        [{"k": "header", "pid": 10, "ppid": 1, "argv": ["t.py"], "wall_t0": T0}]
        + [
            {"k": "sample", "t": 0.1 * s, "step": s, "v": {"rss_bytes": 1e8}} for s in range(1, 101)
        ],
    )
    # WHEN it is rebuilt (memprobe report RUN_DIR)
    record = rebuild(str(run_dir))
    # THEN the USS sample carries the step main had reached at 2 s, not its last step
    assert record.processes[0].series["uss_bytes"].step == [20]
    full = rebuild(str(run_dir), max_points=None)
    assert len(full.processes[0].series["rss_bytes"].value) == 100


def test_census_buffer_truthiness_and_order() -> None:
    buf = CensusBuf(cap=16)
    assert not buf
    for i in range(100):
        buf.append({"t": float(i), "types": {}, "seq": i})
    buf.append({"t": 1000.0, "tracemalloc": {}})
    assert buf and len(buf.full) <= 16
    out = buf.entries()
    assert [c["t"] for c in out] == sorted(c["t"] for c in out)
    assert out[-1]["t"] == 1000.0
    assert len([c for c in buf.entries(max_full=10) if "types" in c]) <= 10
