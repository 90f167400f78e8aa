"""The census must never break another thread of the target (python/cpython#39117)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SCRIPTS, load, main_process, run_cli

pytestmark = pytest.mark.slow  # end to end: the real CLI as a subprocess


def test_threads_building_tuples_survive_the_census(tmp_path: Path) -> None:
    # GIVEN a target whose threads build tuples from generators non-stop while it steps,
    # and a generous census budget so that censuses come often
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
            ],
            cwd=tmp_path,
        )
        # THEN no thread of the target saw a SystemError, and the run was still recorded
        assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
        assert "errors []" in proc.stdout
        assert main_process(load(out))["steps"] > 100
