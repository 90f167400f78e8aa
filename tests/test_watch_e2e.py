"""memprobe.watch, memprobe.mark and --step-on through the real CLI on small real scripts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from conftest import SCRIPTS, cli_env, load, main_process, run_cli, validate


def _python_with_monitoring() -> Optional[str]:
    """An interpreter with sys.monitoring (3.12+) on this machine, or None."""
    for p in (
        "/root/.pyenv/versions/3.13.0/bin/python",
        "/root/.pyenv/versions/3.12.1/bin/python",
        shutil.which("python3.12"),
    ):
        if not p or not os.path.exists(p):
            continue
        probe = subprocess.run(
            [p, "-c", "import sys; print(hasattr(sys, 'monitoring'))"],
            capture_output=True,
            text=True,
        )
        if probe.stdout.strip() == "True":
            return p
    return None


PY312 = _python_with_monitoring()


def _signals(record: Dict[str, Any]) -> Dict[str, Any]:
    signals: Dict[str, Any] = record["signals"][str(main_process(record)["pid"])]
    return signals


def _kinds(record: Dict[str, Any], kind: str) -> List[Any]:
    return [e["message"] for e in record["events"] if e["kind"] == kind]


@pytest.mark.slow
def test_watched_list_that_grows_is_a_leak_named_by_its_watch(
    tmp_path: Path, schema: Dict[str, Any]
) -> None:
    # GIVEN a loop that appends 4 KiB a step to a watched list and to a watched bounded deque
    out = tmp_path / "run.json"
    proc = run_cli(["run", "--no-live", "-o", str(out), str(SCRIPTS / "watch_grows.py")])
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = load(out)
    validate(record, schema)
    sig = _signals(record)
    # THEN the list's watch leaks at ~4 KiB/step, the deque's does not
    assert sig["watch:episode_log:bytes"]["verdict"] == "leak"
    assert 3500 < sig["watch:episode_log:bytes"]["slope_per_step"] < 5000
    assert sig["watch:episode_log:len"]["verdict"] == "leak"
    assert sig["watch:replay_buffer:bytes"]["verdict"] == "no_leak"
    assert sig["watch:replay_buffer:len"]["verdict"] == "no_leak"
    # AND a finding names the watch as the program named it
    named = [
        f for f in record["findings"] if (f.get("culprit") or {}).get("holder") == "episode_log"
    ]
    assert named and "Watched `episode_log` grows by +" in named[0]["explanation"]
    assert "`episode_log`" in proc.stderr
    assert not any("replay_buffer" in f["explanation"] for f in record["findings"])
    # AND the marks are in the record, with steps, and in the report
    marks = record["marks"]
    assert [m["label"] for m in marks] == [f"epoch {i}" for i in range(6)]
    assert [m["step"] for m in marks[1:]] == [100, 200, 300, 400, 500]
    report = run_cli(["report", str(out)])
    text = " ".join(report.stdout.split())
    assert "Marks epoch 0" in text and "epoch 3 (step 300)" in text


@pytest.mark.slow
def test_watched_bounded_deque_is_no_leak(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    proc = run_cli(
        ["run", "--no-live", "-o", str(out), str(SCRIPTS / "watch_grows.py"), "--bounded"]
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = load(out)
    sig = _signals(record)
    assert sig["watch:replay_buffer:bytes"]["verdict"] == "no_leak"
    assert sig["watch:replay_buffer:len"]["verdict"] == "no_leak"
    assert not any(f["signal"].startswith("watch:") for f in record["findings"])


def test_watch_never_keeps_a_dropped_object_alive(tmp_path: Path) -> None:
    # GIVEN a script that watches a list (no weakref possible) and an object, then drops both
    out = tmp_path / "run.json"
    proc = run_cli(["run", "--no-live", "-o", str(out), str(SCRIPTS / "watch_dropped.py")])
    # THEN both are freed while the program still runs, and the record says so
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "freed list=True obj=True" in proc.stdout
    freed = _kinds(load(out), "watch_freed")
    assert any("`buffer`" in m for m in freed) and any("`scratch`" in m for m in freed)


def test_watch_and_mark_are_noops_unprofiled() -> None:
    code = (
        "import memprobe, sys; x = memprobe.watch('x', [1]); memprobe.mark('m');"
        "print(x, 'memprobe_agent' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), check=True
    )
    assert proc.stdout.strip() == "[1] False"


@pytest.mark.slow
@pytest.mark.parametrize("leak", [True, False], ids=["leak", "fixed"])
def test_step_on_counts_calls_of_a_main_script_function(tmp_path: Path, leak: bool) -> None:
    # GIVEN an evolutionary loop without an optimizer: 300 calls of generation()
    out = tmp_path / "run.json"
    spec = f"{SCRIPTS / 'step_on_loop.py'}:generation"
    args = ["--leak"] if leak else []
    proc = run_cli(
        ["run", "--no-live", "--step-on", spec, "-o", str(out), str(SCRIPTS / "step_on_loop.py")]
        + args
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = load(out)
    # THEN each call is a step, exactly, and the planted leak is caught (the fix is not)
    assert main_process(record)["steps"] == 300
    assert record["x_axis"] == "step"
    assert record["verdict"] == ("leak" if leak else "no_leak"), record["findings"]
    if leak:
        holders = [(f.get("culprit") or {}).get("holder") for f in record["findings"]]
        assert "__main__.history" in holders
    assert _kinds(record, "step_on") and not _kinds(record, "step_on_unmatched")


@pytest.mark.slow
def test_step_on_a_method_of_an_imported_module(tmp_path: Path) -> None:
    # GIVEN an environment's step in a module the script imports, and a target exiting 3
    out = tmp_path / "run.json"
    proc = run_cli(
        [
            "run",
            "--no-live",
            "--step-on",
            "stepon_envs.cartpole:CartPole.step",
            "-o",
            str(out),
            "step_on_env.py",
            "--leak",
            "--exit3",
        ],
        cwd=SCRIPTS,
    )
    # THEN the target's exit code is kept, every env.step is a step, the leak is found
    assert proc.returncode == 3, proc.stderr[-2000:]
    record = load(out)
    assert main_process(record)["steps"] == 300
    assert record["verdict"] == "leak"
    holders = [(f.get("culprit") or {}).get("holder") for f in record["findings"]]
    assert "__main__.env.trajectory" in holders


def test_step_on_that_never_matches_says_so_and_keeps_the_exit_code(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    proc = run_cli(
        [
            "run",
            "--no-live",
            "--step-on",
            "step_on_env.py:no_such_function",
            "-o",
            str(out),
            "step_on_env.py",
            "--steps",
            "20",
            "--exit3",
        ],
        cwd=SCRIPTS,
    )
    assert proc.returncode == 3
    line = "--step-on step_on_env.py:no_such_function never matched a function"
    assert f"memprobe: {line}" in proc.stderr
    assert _kinds(load(out), "step_on_unmatched") == [line]


@pytest.mark.parametrize(
    "spec, words",
    [("nocolon", "no ':'"), ("train.py:main.<locals>.f", "nested"), ("a-b:f", "neither")],
)
def test_bad_step_on_spec_is_a_one_line_error(tmp_path: Path, spec: str, words: str) -> None:
    proc = run_cli(["run", "--step-on", spec, str(SCRIPTS / "step_on_env.py")], cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and lines[0].startswith("memprobe: error: --step-on") and words in lines[0]
    )
    assert not list(tmp_path.glob("*.json"))


@pytest.mark.slow
@pytest.mark.skipif(PY312 is None, reason="no Python >= 3.12 here for sys.monitoring")
def test_step_on_with_sys_monitoring(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    spec = f"{SCRIPTS / 'step_on_loop.py'}:generation"
    proc = run_cli(
        [
            "run",
            "--no-live",
            "--python",
            str(PY312),
            "--step-on",
            spec,
            "-o",
            str(out),
            str(SCRIPTS / "step_on_loop.py"),
            "--leak",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = load(out)
    assert main_process(record)["steps"] == 300
    assert record["verdict"] == "leak"
    assert any("sys.monitoring" in m for m in _kinds(record, "step_on"))
