"""Multi-process bookkeeping without running anything heavy: roles from wire messages,
short-lived children, the tree sampler, the node merge, the grouped live table."""

from __future__ import annotations

import dataclasses
import io
import os
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import psutil
import pytest
from recordgen import make_record
from rich.console import Console

from conftest import validate
from memprobe.collect.assemble import build_record
from memprobe.collect.merge import PID_STRIDE, merge_records
from memprobe.collect.roles import identify
from memprobe.collect.state import RunState
from memprobe.launch.procs import TreeSampler
from memprobe.record import ExitInfo, RecordError, RunRecord
from memprobe.render.live import build_table, compact_bytes
from memprobe.render.livegroups import process_rows

T0 = 1_700_000_000.0


def _header(
    pid: int,
    ppid: int,
    *,
    argv: Optional[List[str]] = None,
    forked_from: Optional[int] = None,
    mp_child: bool = False,
    env: Optional[Dict[str, int]] = None,
    t: float = 0.0,
) -> Dict[str, Any]:
    env = env or {}
    return {
        "k": "header",
        "pid": pid,
        "ppid": ppid,
        "forked_from": forked_from,
        "argv": argv or ["train.py"],
        "python": "3.11.7",
        "wall_t0": T0 + t,
        "rank": env.get("RANK"),
        "local_rank": env.get("LOCAL_RANK"),
        "world_size": env.get("WORLD_SIZE"),
        "local_world_size": env.get("LOCAL_WORLD_SIZE"),
        "group_rank": env.get("GROUP_RANK"),
        "mp_child": mp_child,
    }


def _samples(
    state: RunState,
    pid: int,
    n: int,
    start: float = 0.5,
    rss: float = 100e6,
    per: float = 0.0,
    steps: bool = False,
) -> None:
    for i in range(n):
        state.ingest(
            pid,
            {
                "k": "sample",
                "t": start + 0.5 * i,
                "step": i + 1 if steps else None,
                "v": {"rss_bytes": rss + per * i},
            },
        )


def _torchrun_state(nodes: int = 1, node: int = 0) -> RunState:
    """torchrun (main) with two ranks; rank 1 has a forked DataLoader worker, a forked child
    that has not found its worker id yet, and rank 0 runs `sleep` (no agent)."""
    world = {"WORLD_SIZE": 2 * nodes, "LOCAL_WORLD_SIZE": 2, "GROUP_RANK": node}
    state = RunState(command=["torchrun", "train.py"], cwd="/tmp", started_at=T0)
    state.ingest(100, _header(100, 1, argv=["/venv/bin/torchrun", "train.py"]))
    for local in (0, 1):
        env = {**world, "RANK": 2 * node + local, "LOCAL_RANK": local}
        state.ingest(101 + local, _header(101 + local, 100, env=env, t=1.0))
    env1 = {**world, "RANK": 2 * node + 1, "LOCAL_RANK": 1}
    state.ingest(103, _header(103, 102, forked_from=102, env=env1, t=2.0))
    state.ingest(103, {"k": "identity", "t": 0.3, "worker_id": 0, "mp_name": "ForkProcess-1"})
    state.ingest(104, _header(104, 102, forked_from=102, env=env1, t=2.0))
    for pid in (100, 101, 102, 103, 104):
        _samples(state, pid, 8, steps=pid in (101, 102))
    for i in range(6):
        state.ingest_outside(
            105,
            1.5 + 0.5 * i,
            {"rss_bytes": 1e6, "uss_bytes": 2e5},
            ppid=101,
            argv=["sleep", "5"] if i == 0 else None,
        )
    return state


def test_roles_under_torchrun() -> None:
    # GIVEN torchrun, two ranks, a rank's DataLoader worker, a forked child and `sleep`
    who = identify(_torchrun_state())
    # THEN the launcher is main, ranks come from torchrun's env, and what inherited a
    # rank's env (by fork, or as a non-Python child) is labelled with that rank only
    assert who[100].role == "main" and who[100].rank is None
    assert (who[101].role, who[101].rank, who[101].local_rank) == ("rank", 0, 0)
    assert (who[102].role, who[102].rank, who[102].local_rank) == ("rank", 1, 1)
    assert (who[103].role, who[103].rank, who[103].name) == ("worker", 1, "ForkProcess-1")
    assert (who[104].role, who[104].rank) == ("child", 1)
    assert (who[105].role, who[105].rank, who[105].name) == ("child", 0, "sleep")
    # single node: no node numbers
    assert {w.node for w in who.values()} == {None}


def test_record_keeps_every_process_series_and_labels() -> None:
    # GIVEN the torchrun state WHEN the record is built
    record = build_record(_torchrun_state(), ExitInfo(code=0), 5.0)
    by_pid = {p.pid: p for p in record.processes}
    # THEN main comes first, then ranks, workers, children; each keeps its own series
    assert [p.role for p in record.processes] == [
        "main",
        "rank",
        "rank",
        "worker",
        "child",
        "child",
    ]
    assert [p.label for p in record.processes] == [
        "main",
        "rank 0",
        "rank 1",
        "rank 1 worker 0",
        "rank 0 child sleep",
        "rank 1 child",
    ]
    assert by_pid[103].worker_id == 0 and by_pid[103].parent_pid == 102
    assert all(len(p.series["rss_bytes"].value) >= 6 for p in record.processes)
    # the non-Python child: RSS from outside stands in, argv from psutil, no agent
    sleep = by_pid[105]
    assert sleep.has_agent is False and sleep.argv == ["sleep", "5"]
    assert sleep.series["rss_bytes"].value == [1e6] * 6
    assert sleep.series["uss_bytes"].value == [2e5] * 6


def test_multi_node_ranks_carry_their_node() -> None:
    # GIVEN node 1 of a two-node job (WORLD_SIZE 4 > LOCAL_WORLD_SIZE 2)
    record = build_record(_torchrun_state(nodes=2, node=1), ExitInfo(code=0), 5.0)
    ranks = [p for p in record.processes if p.role == "rank"]
    # THEN ranks have global ranks 2 and 3 on node 1, and say so
    assert [(p.rank, p.local_rank, p.node) for p in ranks] == [(2, 0, 1), (3, 1, 1)]
    assert [p.label for p in ranks] == ["node 1 rank 2", "node 1 rank 3"]


def test_short_lived_children_are_summarised_not_recorded() -> None:
    # GIVEN a main and twelve 50 ms pool processes (a header and one sample each)
    state = RunState(command=["python", "pool.py"], cwd="/tmp", started_at=T0)
    state.ingest(10, _header(10, 1, argv=["pool.py"]))
    _samples(state, 10, 30)
    for i in range(12):
        pid = 20 + i
        state.ingest(pid, _header(pid, 10, forked_from=10, t=1.0 + 0.1 * i))
        state.ingest(pid, {"k": "identity", "t": 0.01, "mp_name": f"ForkPoolWorker-{i + 1}"})
        state.ingest(pid, {"k": "sample", "t": 0.05, "step": None, "v": {"rss_bytes": 2e7}})
    # WHEN the record is built
    record = build_record(state, ExitInfo(code=0), 16.0)
    # THEN only main is recorded, and one event counts the others by name
    assert [p.pid for p in record.processes] == [10]
    events = [e for e in record.events if e.kind == "short_lived"]
    assert len(events) == 1 and "12 × ForkPoolWorker" in events[0].message
    # and the live table does not show them either, only counts them
    rows = process_rows(state)
    assert [r.kind for r in rows] == ["process", "total"]
    assert rows[-1].label == "all (1; 12 short-lived)"


def test_worker_outside_samples_follow_the_steps_of_the_process_they_serve() -> None:
    # GIVEN a main at step 40 and its DataLoader worker, which has no steps of its own
    state = RunState(command=["python", "t.py"], cwd="/tmp", started_at=T0)
    state.ingest(10, _header(10, 1))
    _samples(state, 10, 40, steps=True)
    state.ingest(11, _header(11, 10, forked_from=10, t=1.0))
    # WHEN the parent samples the worker's USS
    state.ingest_outside(11, 20.0, {"rss_bytes": 3e8, "uss_bytes": 1e7}, ppid=10)
    # THEN the sample is stamped with main's step, so the worker is judged per step too
    assert state.procs[11].series["uss_bytes"].step == [40]


def _rank_record(
    node_pid: int, started_at: float, group_rank: Optional[int], leak_rank: Optional[int] = None
) -> RunRecord:
    rec = make_record(
        roles=(("main", None, None), ("rank", 0, None), ("rank", 1, None)),
        steps=60,
        leak_bytes_per_step=0.0,
    )
    procs = [
        dataclasses.replace(
            p,
            pid=node_pid + i,
            parent_pid=None if i == 0 else node_pid,
            node=group_rank if p.role == "rank" else None,
        )
        for i, p in enumerate(rec.processes)
    ]
    return dataclasses.replace(rec, processes=procs, started_at=started_at)


def test_a_managers_series_is_named_by_the_holder_of_its_proxy() -> None:
    from memprobe.collect.managed import name_shared
    from memprobe.record import Process, Series

    def series(n: int) -> Series:
        return Series(
            step=[None] * n, t=[float(i) for i in range(n)], value=[float(i) for i in range(n)]
        )

    # GIVEN a trainer whose census found two proxies, and the manager's process whose
    # agent reported two shared lists that grew (one of them no census found a proxy for)
    proxies = [
        {
            "id": "7f01",
            "holder": "train.py:main:episodes",
            "type": "multiprocessing.managers.ListProxy",
        },
        {"id": "7f02", "holder": "__main__.stats", "type": "multiprocessing.managers.DictProxy"},
    ]
    trainer = Process(pid=10, census=[{"step": 25, "proxies": proxies}])  # type: ignore[typeddict-unknown-key]
    server = Process(
        pid=11,
        parent_pid=10,
        role="child",
        series={
            "rss_bytes": series(5),
            "container:manager[7f01]:len": series(5),
            "container:manager[7f09]:len": series(5),
        },
    )
    named = name_shared([trainer, server])
    # THEN the shared list is called what the trainer calls it; the other keeps its ident
    assert sorted(named[1].series) == [
        "container:manager[7f09]:len",
        "container:train.py:main:episodes:len",
        "rss_bytes",
    ]
    assert named[0] is trainer  # nothing to rename there
    # AND without any proxy the processes are returned as they were
    assert name_shared([server]) == [server]


def test_merge_labels_nodes_shifts_clock_and_keeps_pids_apart(schema: Dict[str, Any]) -> None:
    # GIVEN two single-node records whose processes have the same pids, node b started 2 s later
    a = _rank_record(500, T0, None)
    b = _rank_record(500, T0 + 2.0, None)
    # WHEN merged
    merged = merge_records([a, b])
    # THEN every process is there, labelled by node (position), pids of b moved clear of a's
    assert len(merged.processes) == 6
    assert [p.label for p in merged.processes] == [
        "node 0 main",
        "node 0 rank 0",
        "node 0 rank 1",
        "node 1 main",
        "node 1 rank 0",
        "node 1 rank 1",
    ]
    assert [p.pid for p in merged.processes[3:]] == [500 + PID_STRIDE + i for i in range(3)]
    assert merged.processes[4].parent_pid == 500 + PID_STRIDE
    assert len({p.pid for p in merged.processes}) == 6
    # one clock: b's series start 2 s later; the run spans both
    assert merged.processes[3].series["rss_bytes"].t[0] == pytest.approx(
        a.processes[0].series["rss_bytes"].t[0] + 2.0
    )
    assert merged.started_at == T0
    assert merged.duration_s == pytest.approx(b.duration_s + 2.0)
    # no stale analysis: findings and verdict are for a fresh judgement
    assert merged.findings == [] and merged.signals == {} and merged.verdict == "inconclusive"
    assert sum(1 for e in merged.events if e.kind == "merged") == 2
    validate(merged.to_json(), schema)
    assert RunRecord.from_json(merged.to_json()).processes[5].label == "node 1 rank 1"


def test_merge_keeps_torchrun_node_numbers_and_distinct_pids() -> None:
    # GIVEN the records of nodes 1 and 0 of one job (GROUP_RANK known), distinct pids
    n1 = _rank_record(700, T0 + 1.0, 1)
    n0 = _rank_record(600, T0, 0)
    merged = merge_records([n1, n0])
    # THEN the nodes are the job's, pids are untouched, every process has a node
    assert [(p.node, p.pid) for p in merged.processes] == [
        (1, 700),
        (1, 701),
        (1, 702),
        (0, 600),
        (0, 601),
        (0, 602),
    ]
    with pytest.raises(RecordError):
        merge_records([])


def test_merged_record_is_judged_per_node_rank() -> None:
    # GIVEN node 1's rank 1 leaking 64 KiB/step and everything else flat
    from memprobe.analysis.finalize import finalize

    leaky = make_record(roles=(("rank", 0, None), ("rank", 1, None)), steps=120, seed=3)
    procs = list(leaky.processes)
    grow = [v + 65536.0 * i for i, v in enumerate(procs[1].series["rss_bytes"].value)]
    procs[1] = dataclasses.replace(
        procs[1],
        series={
            **procs[1].series,
            "rss_bytes": dataclasses.replace(procs[1].series["rss_bytes"], value=grow),
        },
    )
    n0 = dataclasses.replace(
        make_record(roles=(("rank", 0, None), ("rank", 1, None)), steps=120, seed=4),
        signals={},
        findings=[],
    )
    n1 = dataclasses.replace(leaky, processes=procs, signals={}, findings=[])
    # WHEN merged and analysed
    judged = finalize(merge_records([n0, n1]))
    labels = {p.pid: p.label for p in judged.processes}
    rss_leaks = {
        labels[f.pid]
        for f in judged.findings
        if f.verdict == "leak" and "rss_bytes" in (f.signals or [f.signal]) and f.pid is not None
    }
    # THEN the finding names that node's rank, and only it
    assert rss_leaks == {"node 1 rank 1"}
    assert judged.verdict == "leak"


def _crowd_state() -> RunState:
    """main, 2 ranks, 8 DataLoader workers per rank (worker 5 of rank 1 leaking), 3 pool
    tasks of 50 ms: 19 processes worth a row."""
    state = RunState(command=["torchrun", "train.py"], cwd="/tmp", started_at=T0)
    state.ingest(100, _header(100, 1, argv=["torchrun"]))
    _samples(state, 100, 12)
    pid = 200
    for rank in (0, 1):
        env = {"RANK": rank, "LOCAL_RANK": rank, "WORLD_SIZE": 2, "LOCAL_WORLD_SIZE": 2}
        rank_pid = 101 + rank
        state.ingest(rank_pid, _header(rank_pid, 100, env=env))
        _samples(state, rank_pid, 12, steps=True)
        for wid in range(8):
            pid += 1
            state.ingest(pid, _header(pid, rank_pid, forked_from=rank_pid, env=env))
            state.ingest(pid, {"k": "identity", "t": 0.1, "worker_id": wid})
            _samples(state, pid, 12, rss=3e8, per=(5e6 if (rank, wid) == (1, 5) else 0.0))
    for i in range(3):
        state.ingest(900 + i, _header(900 + i, 100, forked_from=100))
        state.ingest(900 + i, {"k": "sample", "t": 0.05, "step": None, "v": {"rss_bytes": 2e7}})
    return state


def test_live_table_with_many_processes_stays_one_screen() -> None:
    # GIVEN 19 processes and a live verdict of leak on one worker
    state = _crowd_state()
    leaker = next(pid for pid, p in state.procs.items() if p.worker_id == 5 and p.ppid == 102)
    verdicts = {(leaker, "rss_bytes"): ("leak", "+5.0 MB/s")}
    rows = process_rows(state, verdicts, max_rows=16)
    # THEN rows are grouped (main, ranks, workers) with totals and fit the budget
    kinds = [(r.kind, r.label) for r in rows]
    assert kinds[0] == ("process", "main · torchrun")
    assert ("group", "ranks (2)") in kinds and ("group", "workers (16)") in kinds
    assert sum(1 for r in rows if r.kind == "process") <= 16
    more = [r for r in rows if r.kind == "more"]
    assert len(more) == 1 and more[0].label.startswith("… ") and "more workers" in more[0].label
    # the leaking worker is among those shown, and its group says one leaks
    assert any(r.pid == leaker and r.verdict == "leak" for r in rows)
    group = next(r for r in rows if r.label == "workers (16)")
    assert group.verdict == "leak" and group.rss == pytest.approx(16 * 3e8 + 11 * 5e6)
    assert rows[-1].label == "all (19; 3 short-lived)"
    # AND rendered at 120 columns, every line fits and the labels read as they should
    out = io.StringIO()
    Console(file=out, width=120, force_terminal=False).print(build_table(state, 30.0, verdicts))
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 120
    for label in ("ranks (2)", "rank 0", "rank 1", "rank 1 · worker 5", "workers (16)", "leak"):
        assert label in text


def test_compact_bytes() -> None:
    assert [compact_bytes(v) for v in (0, 512, 42.4 * 2**20, 309 * 2**20, 1.21 * 2**30)] == [
        "0B",
        "512B",
        "42.4M",
        "309M",
        "1.21G",
    ]
    assert compact_bytes(-6.69 * 2**20, signed=True) == "-6.69M"
    assert compact_bytes(None) == ""


@pytest.fixture
def fake_torch_worker() -> Iterator[types.ModuleType]:
    name = "torch.utils.data._utils.worker"
    saved = sys.modules.get(name)
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    yield mod
    if saved is None:
        sys.modules.pop(name, None)
    else:
        sys.modules[name] = saved


def test_agent_reads_worker_id_from_slotted_and_plain_worker_info(
    fake_torch_worker: types.ModuleType,
) -> None:
    from memprobe.bootstrap.memprobe_agent import identity

    # GIVEN torch >= 2.x's slotted frozen dataclass WorkerInfo
    @dataclasses.dataclass(frozen=True)
    class WorkerInfo:
        __slots__ = ("id", "num_workers", "seed")
        id: int
        num_workers: int
        seed: int

    fake_torch_worker._worker_info = WorkerInfo(3, 4, 0)  # type: ignore[attr-defined]
    assert identity._worker_info() == (3, 4)

    # AND an older torch's plain class with an instance dict
    class OldWorkerInfo:
        def __init__(self) -> None:
            self.id, self.num_workers = 1, 2

    OldWorkerInfo.__name__ = "WorkerInfo"
    fake_torch_worker._worker_info = OldWorkerInfo()  # type: ignore[attr-defined]
    assert identity._worker_info() == (1, 2)
    # AND anything else is ignored rather than touched
    fake_torch_worker._worker_info = object()  # type: ignore[attr-defined]
    assert identity._worker_info() is None


@pytest.mark.slow
def test_tree_sampler_sees_non_python_children_and_skips_zombies(tmp_path: Path) -> None:
    # GIVEN a Python process with a live `sleep` child and an exited, never-reaped one
    code = (
        "import subprocess, time\n"
        "z = subprocess.Popen(['true'])\n"
        "s = subprocess.Popen(['sleep', '5'])\n"
        "time.sleep(5)\n"
    )
    root = subprocess.Popen([sys.executable, "-c", code])
    try:
        sampler = TreeSampler(root.pid, full_every_s=0.0)
        deadline = time.monotonic() + 10
        seen: Dict[int, Any] = {}
        argv: Dict[int, List[str]] = {}
        while time.monotonic() < deadline:
            samples = sampler.sample()
            argv.update(sampler.new_argv)
            seen = {pid: (ppid, v) for pid, ppid, v in samples}
            if any(a[:1] == ["sleep"] for pid, a in argv.items() if pid in seen):
                break
            time.sleep(0.2)
        time.sleep(0.5)  # `true` has surely exited by now
        seen = {pid: (ppid, v) for pid, ppid, v in sampler.sample()}
    finally:
        root.kill()
        root.wait()
    # THEN the sleep child is sampled with RSS, USS and PSS, its parent and its argv;
    # the zombie `true` is not sampled (its memory would read as 0)
    sleep_pid = next(pid for pid, a in argv.items() if a[:1] == ["sleep"])
    assert set(seen) == {root.pid, sleep_pid}
    ppid, values = seen[sleep_pid]
    assert ppid == root.pid
    assert values["rss_bytes"] > 0 and {"uss_bytes", "pss_bytes"} <= set(values)


def test_uss_reads_are_spaced_by_what_the_walk_costs_the_process() -> None:
    from memprobe.launch import procs

    # GIVEN the sampler of a process whose USS/PSS read (a walk of its page tables, holding
    # its memory-map lock) costs 16 ms, as a 470 MiB Lightning run's did
    sampler = TreeSampler(os.getpid())
    pid, now = os.getpid(), time.monotonic()
    sampler._first_seen[pid] = now - 60.0
    sampler._full_cost[pid] = 0.016
    # THEN after its first seconds it is read only as often as keeps the walks under
    # LATE_SHARE of its time (every 8 s, not the usual 0.5 s: the walk's lock costs the
    # process far more than the walk's own length) ...
    assert sampler.full_interval(pid, 1, now) == pytest.approx(0.016 / procs.LATE_SHARE)
    assert sampler.full_interval(pid, 1, now) >= 10 * procs.USS_EVERY_S
    # ... and in its first seconds under twice TARGET_SHARE (every 0.4 s: a short run still
    # gets its USS/PSS points)
    sampler._first_seen[pid] = now
    assert sampler.full_interval(pid, 1, now) == pytest.approx(0.008 / procs.TARGET_SHARE)
    # AND in a tree of processes (a forked worker and its parent, whose pages turn
    # private) the same read keeps the usual pace
    assert sampler.full_interval(pid, 2, now) == pytest.approx(procs.USS_EVERY_S / 2)
    # AND a cheap read keeps the usual pace: every USS_EVERY_S, half that early on
    sampler._full_cost[pid] = 0.001
    assert sampler.full_interval(pid, 1, now) == pytest.approx(procs.USS_EVERY_S / 2)
    sampler._first_seen[pid] = now - 60.0
    assert sampler.full_interval(pid, 1, now) == pytest.approx(procs.USS_EVERY_S)


class _FakeCuda:
    """The part of ``torch.cuda`` the agent's CUDA read touches, for a machine without a GPU:
    two devices whose allocators hold what ``reserved`` says (the agent's selection and its
    reading of the nested statistics; tests/test_gpu.py runs the real thing on a GPU)."""

    def __init__(self) -> None:
        self.reserved = [0, 0]

    def is_initialized(self) -> bool:
        return True

    def device_count(self) -> int:
        return 2

    def memory_stats_as_nested_dict(self, i: int) -> Dict[str, Any]:
        r = self.reserved[i]
        return {
            "allocated_bytes": {"all": {"current": r // 2, "peak": r}},
            "reserved_bytes": {"all": {"current": r, "peak": r}},
            "inactive_split_bytes": {"all": {"current": 0}},
        }


def test_cuda_figures_only_for_the_devices_the_process_put_memory_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from memprobe.bootstrap.memprobe_agent import cheap

    fake = _FakeCuda()
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=fake))
    monkeypatch.setattr(cheap, "_CUDA_USED", set())
    # GIVEN a process with CUDA initialised that has put memory on device 0 only
    fake.reserved = [8 << 20, 0]
    out: Dict[str, Any] = {}
    cheap.cuda_signals(out)
    # THEN only device 0's figures, read from the allocator's nested statistics
    assert out == {
        "cuda:0/allocated_bytes": 4 << 20,
        "cuda:0/reserved_bytes": 8 << 20,
        "cuda:0/cached_free_bytes": 4 << 20,
        "cuda:0/max_allocated_bytes": 8 << 20,
        "cuda:0/inactive_split_bytes": 0,
    }
    # AND once device 1 has held memory, its series goes on, also after it emptied its cache
    fake.reserved = [8 << 20, 2 << 20]
    last: Dict[str, Any]
    out, last = {}, {}
    cheap.cuda_signals(out)
    fake.reserved = [0, 0]
    cheap.cuda_signals(last)
    assert "cuda:1/reserved_bytes" in out and last["cuda:1/reserved_bytes"] == 0
    assert last["cuda:0/reserved_bytes"] == 0


def test_the_tree_is_read_from_its_own_processes_not_the_whole_machine(tmp_path: Path) -> None:
    from memprobe.launch import procs

    # GIVEN a program whose main thread starts a child that starts a grandchild, and whose
    # second thread starts a child of its own (the kernel lists it under that thread)
    ready = tmp_path / "ready"
    code = (
        "import subprocess, sys, threading, time\n"
        "kids = [subprocess.Popen(['sh', '-c', 'sleep 30 & wait'])]\n"
        "t = threading.Thread(target=lambda: kids.append(subprocess.Popen(['sleep', '30'])))\n"
        "t.start(); t.join()\n"
        f"open({str(ready)!r}, 'w').close()\n"
        "time.sleep(30)\n"
    )
    root = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 10
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # the shell has started its sleep
        proc = psutil.Process(root.pid)
        expected = {p.pid for p in proc.children(recursive=True)}
        # WHEN the sampler lists the tree
        found = procs.descendants(proc)
        samples = TreeSampler(root.pid, full_every_s=1e9).sample()
    finally:
        for p in psutil.Process(root.pid).children(recursive=True):
            p.kill()
        root.kill()
        root.wait()
    # THEN it finds what psutil's walk over every process of the machine finds: the two
    # children, the grandchild, each once
    assert len(expected) == 3
    if os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
        assert procs._kernel_lists_children()
    assert sorted(found) == sorted(expected)
    assert {pid for pid, _, _ in samples} == expected | {root.pid}
