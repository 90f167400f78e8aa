"""The census must never break another thread of the target (python/cpython#39117)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SCRIPTS, load, main_process, run_cli

pytestmark = pytest.mark.slow  # end to end: the real CLI as a subprocess


@pytest.mark.parametrize("how", ["threads", "async"])
def test_threads_building_tuples_survive_the_census(tmp_path: Path, how: str) -> None:
    # GIVEN a target whose threads build tuples from generators non-stop while it steps (in
    # plain functions, or in coroutines of an asyncio loop of their own), and a generous
    # census budget so that censuses come often
    for i in range(2):
        out = tmp_path / f"r{i}.json"
        proc = run_cli(
            [
                "run",
                "--no-live",
                "--budget",
                "0.6",
                "-o",
                str(out),
                str(SCRIPTS / "tuple_builder.py"),
                "5",
                how,
            ],
            cwd=tmp_path,
        )
        # THEN no thread of the target saw a SystemError, and the run was still recorded
        assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
        assert "errors []" in proc.stdout
        assert main_process(load(out))["steps"] > 100


def test_an_asyncio_program_busy_in_its_coroutines_gets_censuses(tmp_path: Path) -> None:
    # GIVEN an asyncio service whose request coroutines compute without a pause and keep
    # every result in a set of the service (its loop is inside a coroutine nearly always)
    out = tmp_path / "r.json"
    proc = run_cli(
        # its loop lets go of the GIL for a moment every few milliseconds: the agent's thread
        # starved (3-6 censuses in 14 s, each seconds long) until gilshare.py
        ["run", "--no-live", "-o", str(out), str(SCRIPTS / "async_busy.py"), "10"],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    record = load(out)
    # THEN censuses were taken while it ran, and the finding names the set (through the
    # coroutine that runs: ``handle:self.results``, or through ``main:service.results``)
    census = main_process(record)["census"]
    assert len(census) >= 4, [c["t"] for c in census]
    holders = [(f.get("culprit") or {}).get("holder") or "" for f in record["findings"]]
    assert any(h.endswith(("self.results", "service.results")) for h in holders), holders


def test_a_program_whose_loop_runs_inside_a_generator_gets_censuses(tmp_path: Path) -> None:
    # GIVEN a simulation whose cycles are computed inside a generator a ``for`` loop
    # resumes (the main thread is inside a generator's frame nearly all the time), keeping
    # every cycle's trace in a module-level list
    out = tmp_path / "r.json"
    proc = run_cli(
        ["run", "--no-live", "-o", str(out), str(SCRIPTS / "generator_loop.py"), "9"],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    record = load(out)
    # THEN censuses were taken while it ran (none is put off for a generator a loop of
    # Python code resumes), and the finding names the list
    assert len(main_process(record)["census"]) >= 3
    holders = [(f.get("culprit") or {}).get("holder") or "" for f in record["findings"]]
    assert "__main__.TRACES" in holders, holders
