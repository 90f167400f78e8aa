"""The wire between agent and parent: its version is checked on both sides, and a process
whose agent did not start is reported, never read as garbage or left silently empty."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List

import pytest

from memprobe.bootstrap.memprobe_agent import wire
from memprobe.collect.assemble import build_record
from memprobe.collect.journal import PARENT_FILE
from memprobe.collect.rebuild import rebuild
from memprobe.collect.state import RunState
from memprobe.record import ExitInfo


def _header(pid: int, version: Any = wire.WIRE_VERSION) -> Dict[str, Any]:
    return {"k": wire.K_HEADER, "wire": version, "pid": pid, "ppid": 1, "wall_t0": 100.0}


def _samples(n: int) -> List[Dict[str, Any]]:
    return [
        {"k": wire.K_SAMPLE, "t": 0.1 * i, "step": i, "v": {wire.RSS: 1e6 + i}} for i in range(n)
    ]


def test_a_header_of_another_wire_version_leaves_that_process_out() -> None:
    # GIVEN one process speaking this wire and one speaking a future version
    state = RunState(command=["python", "t.py"], cwd="/", started_at=100.0)
    for pid, version in ((10, wire.WIRE_VERSION), (11, wire.WIRE_VERSION + 1)):
        state.ingest(pid, _header(pid, version))
        for m in _samples(20):
            state.ingest(pid, m)
    record = build_record(state, ExitInfo(code=0), 2.0)
    # THEN only the first is read, and an event says why the other is not
    assert [p.pid for p in record.processes] == [10]
    mismatch = [e for e in record.events if e.kind == "wire_mismatch"]
    assert len(mismatch) == 1 and mismatch[0].pid == 11
    assert f"wire version {wire.WIRE_VERSION + 1}" in mismatch[0].message


def test_a_header_without_a_version_is_read_as_this_one() -> None:
    # lines written by hand (tests, tools) carry no version: read, not refused
    state = RunState(command=["python"], cwd="/", started_at=100.0)
    header = _header(10)
    del header["wire"]
    state.ingest(10, header)
    for m in _samples(20):
        state.ingest(10, m)
    record = build_record(state, ExitInfo(code=0), 2.0)
    assert [p.pid for p in record.processes] == [10]
    assert not [e for e in record.events if e.kind == "wire_mismatch"]


def _write(path: Path, messages: List[Dict[str, Any]]) -> None:
    path.write_text("".join(wire.encode(m) for m in messages))


def test_rebuild_reports_foreign_agents_and_agents_that_did_not_start(tmp_path: Path) -> None:
    # GIVEN a run folder: a good process, one of another wire version, and a process whose
    # bootstrap found its Python too old
    _write(tmp_path / PARENT_FILE, [{"k": "meta", "command": ["x"], "started_at": 100.0}])
    _write(tmp_path / wire.proc_file_name(10), [_header(10), *_samples(20)])
    _write(tmp_path / wire.proc_file_name(11), [_header(11, "2"), *_samples(20)])
    (tmp_path / f"{wire.ERROR_FILE_PREFIX}12.txt").write_text("Python 3.6.15 is older\n")
    # WHEN the folder is rebuilt into a record
    record = rebuild(str(tmp_path))
    # THEN the good process is there, and both others are events naming their pids
    assert [p.pid for p in record.processes] == [10]
    kinds = {(e.kind, e.pid) for e in record.events}
    assert ("wire_mismatch", 11) in kinds and ("agent_error", 12) in kinds


def test_the_agent_does_not_start_for_a_parent_of_another_wire_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a config from a memprobe whose wire version is not the agent's
    from memprobe.bootstrap.memprobe_agent import core

    config = {"run_dir": str(tmp_path), "wire": wire.WIRE_VERSION + 1}
    monkeypatch.setenv(wire.ENV_CONFIG, json.dumps(config))
    monkeypatch.setattr(core, "_agent", None)
    # WHEN the bootstrap starts the agent
    started = core.start()
    # THEN it does not start, writes nothing of its own, and says why where the parent looks
    assert started is False and core._agent is None
    assert not list(tmp_path.glob("proc-*"))
    [(pid, line)] = wire.read_error_files(str(tmp_path))
    assert pid == os.getpid() and "wire version" in line and "did not start" in line


def test_version_problem_names_what_it_got() -> None:
    assert wire.version_problem(wire.WIRE_VERSION) is None
    assert wire.version_problem(None) is None
    for other in (wire.WIRE_VERSION + 1, "1", True, [1]):
        problem = wire.version_problem(other)
        assert problem is not None and str(wire.WIRE_VERSION) in problem
