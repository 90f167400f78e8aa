"""End to end: `memprobe run` on the multi-process sample scripts; assert on the record.

Every run starts once (two at a time) when the first test needs one; each test reads
one record: roles, per-process series, and the verdict per process.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from conftest import SAMPLES, cli_env, load, validate

pytestmark = pytest.mark.slow  # end to end: the real CLI as a subprocess

Record = Dict[str, Any]
MIB = 2**20
TORCHRUN = Path(sys.executable).parent / "torchrun"  # installed with torch, beside python

# name -> the target and its arguments. Short runs: long enough for 10+ samples per worker
# after its warm-up, short enough for the whole module to stay well under three minutes.
RUNS: Dict[str, List[str]] = {  # longest first
    "ddp": [
        "--",
        str(TORCHRUN),
        "--standalone",
        "--nproc-per-node",
        "2",
        str(SAMPLES / "ddp_train.py"),
        "--steps",
        "300",
        "--steps-per-s",
        "60",
    ],
    # default options: the agent takes no object census in forked children (gc.get_objects()
    # would touch every object and un-share the heap itself, hundreds of MB in one jump that
    # buried the copy-on-access slope), so the slope here is the dataset's alone
    "cow": [
        str(SAMPLES / "mp_cow_dataset.py"),
        "--items",
        "1500000",
        # the workers start reading seconds into the run (1.5 M items to build, workers
        # to fork): 18 s of sweep leave the slope enough points on a slow or busy machine
        "--seconds",
        "18",
    ],
    "dl_spawn": [
        str(SAMPLES / "mp_dataloader.py"),
        "--start-method",
        "spawn",
        "--leak-worker",
        "0",
        "--seconds",
        "10",
    ],
    "dl_fork": [
        str(SAMPLES / "mp_dataloader.py"),
        "--start-method",
        "fork",
        "--leak-worker",
        "1",
        "--seconds",
        "10",
    ],
    "subproc": [str(SAMPLES / "mp_subprocess.py"), "--seconds", "14"],
    "manager": [str(SAMPLES / "mp_manager.py"), "--leak", "--seconds", "10"],
    "pool": [str(SAMPLES / "mp_pool.py"), "--leak", "--seconds", "8"],
}


class _Runs:
    """The module's runs, two at a time, longest first: much of each run is paced sleeping
    and interpreter start-up, so two side by side cost little more than one on two cores
    (more at once starve each other's start-up and the paced loops fall behind)."""

    parallel = 2

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: Dict[str, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._schedule, daemon=True)
        self._thread.start()

    def _schedule(self) -> None:
        pending = list(RUNS)
        while pending and not self._stop.is_set():
            with self._lock:
                running = sum(1 for p in self.procs.values() if p.poll() is None)
                if running < self.parallel:
                    self._start(pending.pop(0))
                    continue
            self._stop.wait(0.2)

    def _start(self, name: str) -> None:
        with open(self.tmp / f"{name}.log", "wb") as log:
            self.procs[name] = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "memprobe",
                    "run",
                    "--no-live",
                    "-o",
                    str(self.tmp / f"{name}.json"),
                    *RUNS[name],
                ],
                cwd=self.tmp,
                env=cli_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def record(self, name: str) -> Record:
        deadline = time.monotonic() + 300
        while name not in self.procs and time.monotonic() < deadline:
            time.sleep(0.2)
        proc = self.procs[name]
        try:
            code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        output = (self.tmp / f"{name}.log").read_text(errors="replace")
        assert code == 0, output[-3000:]
        return load(self.tmp / f"{name}.json")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        with self._lock:
            for proc in self.procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Runs]:
    started = _Runs(tmp_path_factory.mktemp("multiproc"))
    yield started
    started.stop()


def _procs(record: Record, role: str) -> List[Record]:
    return [p for p in record["processes"] if p["role"] == role]


def _memory_leaks(record: Record, pid: int) -> Dict[str, Record]:
    """Leak findings on the process' memory (bytes) signals. A short helper-spawning main
    can show a Python-heap sawtooth from the garbage collector that a few periods do not
    settle (a known limit, see the issue notes): the per-process claim is about memory."""
    return {k: f for k, f in _leaks(record, pid).items() if k.endswith("bytes")}


def _leaks(record: Record, pid: int) -> Dict[str, Record]:
    """signal -> leak finding, for one process."""
    return {
        signal: f
        for f in record["findings"]
        if f["pid"] == pid and f["verdict"] == "leak" and f.get("kind", "leak") == "leak"
        for signal in (f.get("signals") or [f["signal"]])  # one finding per culprit
    }


def _verdict(record: Record, pid: int, signal: str) -> str:
    return str(record["signals"][str(pid)][signal]["verdict"])


def _growth(p: Record, signal: str, after: float = 0.0) -> float:
    """Growth of a series over its last (1 - after) share of samples."""
    v = p["series"][signal]["value"]
    return float(v[-1] - v[int(after * (len(v) - 1))])


@pytest.fixture(scope="module")
def dl_fork(runs: _Runs) -> Record:
    return runs.record("dl_fork")


@pytest.fixture(scope="module")
def dl_spawn(runs: _Runs) -> Record:
    return runs.record("dl_spawn")


@pytest.mark.parametrize("mode", ["fork", "spawn"])
def test_dataloader_workers_each_judged_on_their_own(
    request: pytest.FixtureRequest, schema: Dict[str, Any], mode: str
) -> None:
    # GIVEN a DataLoader with 2 workers whose dataset leaks in one worker only
    record: Record = request.getfixturevalue(f"dl_{mode}")
    leaking_id = 1 if mode == "fork" else 0
    validate(record, schema)
    # THEN main and two workers (ids 0 and 1, children of main) have their own series
    (main,) = _procs(record, "main")
    workers = sorted(_procs(record, "worker"), key=lambda p: p["worker_id"])
    assert [w["worker_id"] for w in workers] == [0, 1]
    assert all(w["parent_pid"] == main["pid"] and w["has_agent"] for w in workers)
    assert all(
        w["name"]
        == ("ForkProcess" if mode == "fork" else "SpawnProcess") + f"-{w['worker_id'] + 1}"
        for w in workers
    )
    for w in workers:
        assert {"rss_bytes", "uss_bytes", "pss_bytes"} <= set(w["series"])
        assert len(w["series"]["uss_bytes"]["value"]) >= 8
    # the leaking worker grows by far more than the clean one once both run (a spawned
    # worker first imports torch: its first samples are the interpreter starting, and on a
    # loaded machine that start took 40 % of a clean worker's samples: its last 40 % then)
    leaky, clean = workers[leaking_id], workers[1 - leaking_id]
    assert _growth(leaky, "rss_bytes", after=0.4) > 20 * MIB
    assert _growth(clean, "rss_bytes", after=0.6) < 0.25 * _growth(leaky, "rss_bytes", after=0.6)
    # AND the verdicts are per process: that worker leaks, the other and main do not
    assert {"rss_bytes", "uss_bytes", "pss_bytes"} & set(_leaks(record, leaky["pid"]))
    assert _leaks(record, clean["pid"]) == {}
    assert _memory_leaks(record, main["pid"]) == {}
    assert _verdict(record, main["pid"], "rss_bytes") != "leak"
    assert record["verdict"] == "leak"


@pytest.fixture(scope="module")
def pool(runs: _Runs) -> Record:
    return runs.record("pool")


def test_pool_workers_recorded_burst_summarised(pool: Record) -> None:
    # GIVEN a Pool(2) whose workers keep a cache, after a burst of 8 one-task processes
    (main,) = _procs(pool, "main")
    children = _procs(pool, "child")
    # THEN only the two long-lived pool workers are in the record, named as multiprocessing
    # names them; the burst is one event, not eight processes
    assert len(children) == 2
    assert all(
        c["name"].startswith("ForkPoolWorker-") and c["parent_pid"] == main["pid"] for c in children
    )
    (event,) = [e for e in pool["events"] if e["kind"] == "short_lived"]
    # 8 one-task processes, plus any replacement the pool starts as it closes
    burst = re.search(r"(\d+) × ForkPoolWorker", event["message"])
    assert burst is not None and int(burst.group(1)) >= 8, event["message"]
    # AND each pool worker leaks, main does not
    for c in children:
        assert _growth(c, "rss_bytes") > 30 * MIB and _growth(c, "uss_bytes") > 20 * MIB
        assert "rss_bytes" in _leaks(pool, c["pid"])
    assert _memory_leaks(pool, main["pid"]) == {}


@pytest.fixture(scope="module")
def subproc(runs: _Runs) -> Record:
    return runs.record("subproc")


def test_subprocess_children_python_and_not(subproc: Record) -> None:
    (main,) = _procs(subproc, "main")
    children = {c["name"]: c for c in _procs(subproc, "child")}
    # THEN the exec'd Python child has its own agent and series; `sleep` is seen from outside
    exporter, sleep = children["mp_subprocess.py"], children["sleep"]
    assert exporter["has_agent"] and exporter["parent_pid"] == main["pid"]
    assert exporter["argv"][1:3] == ["--child", "--seconds"]
    assert not sleep["has_agent"] and sleep["argv"] == ["sleep", "14.0"]
    assert len(sleep["series"]["rss_bytes"]["value"]) >= 8
    assert min(sleep["series"]["rss_bytes"]["value"]) > 0  # never a zombie's 0
    # AND the leaking exporter is reported, the clean training loop is not
    assert {"rss_bytes", "uss_bytes", "pss_bytes"} & set(_leaks(subproc, exporter["pid"]))
    assert _memory_leaks(subproc, main["pid"]) == {}
    assert _verdict(subproc, main["pid"], "rss_bytes") != "leak"


@pytest.fixture(scope="module")
def ddp(runs: _Runs) -> Record:
    return runs.record("ddp")


def test_torchrun_ranks_labelled_leak_on_rank_1_only(ddp: Record, schema: Dict[str, Any]) -> None:
    validate(ddp, schema)
    # THEN torchrun itself is main and the two ranks are ranks 0 and 1, local ranks 0 and 1
    (main,) = _procs(ddp, "main")
    assert main["name"] == "torchrun"
    ranks = sorted(_procs(ddp, "rank"), key=lambda p: p["rank"])
    assert [(r["rank"], r["local_rank"], r["node"]) for r in ranks] == [(0, 0, None), (1, 1, None)]
    assert all(r["parent_pid"] == main["pid"] and r["steps"] == 300 for r in ranks)
    # AND the leak planted on rank 1 is reported on rank 1 only
    assert "rss_bytes" in _leaks(ddp, ranks[1]["pid"])
    assert _leaks(ddp, ranks[0]["pid"]) == {}
    assert _verdict(ddp, ranks[0]["pid"], "rss_bytes") == "no_leak"
    assert _memory_leaks(ddp, main["pid"]) == {}
    assert ddp["verdict"] == "leak"


@pytest.fixture(scope="module")
def cow(runs: _Runs) -> Record:
    return runs.record("cow")


def test_copy_on_access_shows_in_worker_uss_not_rss(cow: Record) -> None:
    # GIVEN forked workers reading a dataset of 1.5 M small Python lists
    (main,) = _procs(cow, "main")
    workers = _procs(cow, "worker")
    assert sorted(w["worker_id"] for w in workers) == [0, 1]
    for w in workers:
        # THEN each worker's private memory climbs while its RSS barely moves
        assert _growth(w, "uss_bytes") > 60 * MIB
        assert abs(_growth(w, "rss_bytes")) < 0.25 * _growth(w, "uss_bytes")
        # and no finding blames RSS: it is the pages un-shared, not new memory
        assert "rss_bytes" not in _leaks(cow, w["pid"])
    # AND the findings name both workers and say their unique memory grows, with the fix;
    # main's RSS is judged flat (its USS/PSS move as the workers un-share its pages)
    flagged = [w for w in workers if {"uss_bytes", "pss_bytes"} & set(_leaks(cow, w["pid"]))]
    assert flagged, cow["findings"]
    for w in workers:
        assert _verdict(cow, w["pid"], "rss_bytes") != "leak"
    assert _memory_leaks(cow, main["pid"]) == {}
    assert _verdict(cow, main["pid"], "rss_bytes") != "leak"
    hints = " ".join(f.get("fix_hint") or "" for f in cow["findings"])
    assert "13246" in hints and "NumPy" in hints


@pytest.fixture(scope="module")
def manager(runs: _Runs) -> Record:
    return runs.record("manager")


def test_a_managers_shared_list_is_named_by_the_proxy_that_feeds_it(manager: Record) -> None:
    # GIVEN a trainer appending every episode to a Manager().list() held in main()'s locals
    # (a dashboard process reads the last one): the list lives in the manager's process
    (main,) = _procs(manager, "main")
    (server,) = [p for p in _procs(manager, "child") if p["name"].startswith("SyncManager")]
    name = "container:mp_manager.py:main:episodes:len"
    # THEN the server's list is followed under the name the trainer's code uses for it
    assert name in server["series"], sorted(server["series"])
    assert _growth(server, name) >= 50
    # AND the finding is the server's, holding that list, while the trainer's memory is flat
    holders = {
        (f["pid"], (f.get("culprit") or {}).get("holder"))
        for f in manager["findings"]
        if f["verdict"] == "leak"
    }
    assert (server["pid"], "mp_manager.py:main:episodes") in holders, holders
    assert _memory_leaks(manager, main["pid"]) == {}
    assert manager["verdict"] == "leak"
