"""A real OOM kill: memprobe and its target in a memory cgroup with a small limit.

Needs a memory cgroup this test may create a child in (root with cgroup v1, or a delegated
cgroup v2 subtree); skipped with the reason otherwise. The SIGKILL stand-in for the OOM
killer runs everywhere (tests/test_faults.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator, Tuple

import pytest
from faultutil import FAST

from conftest import SCRIPTS, cli_env, load, validate

pytestmark = pytest.mark.slow  # end to end: the real CLI as a subprocess

LIMIT = 400 * 1024 * 1024


def _own_memory_cgroup() -> Tuple[str, Path]:
    with open("/proc/self/cgroup") as f:
        entries = [line.split(":", 2) for line in f.read().splitlines()]
    for _, controllers, path in entries:
        if "memory" in controllers.split(","):
            return "v1", Path("/sys/fs/cgroup/memory") / path.lstrip("/")
    for _, controllers, path in entries:
        if controllers == "":
            return "v2", Path("/sys/fs/cgroup") / path.lstrip("/")
    raise OSError("no memory cgroup")


@pytest.fixture
def memory_cgroup() -> Iterator[Path]:
    """A fresh child memory cgroup limited to LIMIT bytes, removed afterwards."""
    try:
        version, parent = _own_memory_cgroup()
        child = parent / f"memprobe-test-{os.getpid()}-{time.monotonic_ns()}"
        child.mkdir()
    except OSError as e:
        pytest.skip(
            f"cannot create a memory cgroup here ({e}); needs root or a delegated cgroup v2 subtree"
        )
    try:
        if version == "v1":
            (child / "memory.limit_in_bytes").write_text(str(LIMIT))
        else:
            (child / "memory.max").write_text(str(LIMIT))
    except OSError as e:
        child.rmdir()
        pytest.skip(f"cannot set a memory limit on {child} ({e})")
    # no swapping instead of the OOM kill, where swap is accounted (absent files: no swap)
    for name, value in (("memory.memsw.limit_in_bytes", LIMIT), ("memory.swap.max", 0)):
        try:
            (child / name).write_text(str(value))
        except OSError:
            pass
    yield child
    for _ in range(100):  # the kernel frees the cgroup once its last process is reaped
        try:
            child.rmdir()
            break
        except OSError:
            time.sleep(0.1)


def test_real_oom_kill_is_recorded_with_the_climb(
    tmp_path: Path, schema: Dict[str, Any], memory_cgroup: Path
) -> None:
    # GIVEN memprobe and a target that grows 8 MiB per step, both in a 400 MiB cgroup
    out = tmp_path / "r.json"
    join = f'echo $$ > {memory_cgroup / "cgroup.procs"} && exec "$@"'
    proc = subprocess.run(
        [
            "sh",
            "-c",
            join,
            "sh",
            sys.executable,
            "-m",
            "memprobe",
            "run",
            "-o",
            str(out),
            *FAST,
            str(SCRIPTS / "fault_oom.py"),
        ],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    # THEN the kernel's OOM killer ended the target (not memprobe), and the record says so
    assert proc.returncode == 128 + 9, proc.stderr
    assert "never killed" not in proc.stdout
    record = load(out)
    validate(record, schema)
    assert record["exit"] == {"code": None, "signal": 9, "oom_killed": True}
    assert record["limits"]["ram_bytes"] == LIMIT
    assert record["limits"]["ram_source"] == "cgroup"
    assert any("OOM killer" in e["message"] for e in record["events"] if e["kind"] == "signal")
    assert "(OOM killer)" in proc.stderr
    # AND it holds the climb up to the kill: RSS rose by hundreds of MiB, close to the limit
    main = [p for p in record["processes"] if p["role"] == "main"][0]
    rss = main["series"]["rss_bytes"]["value"]
    assert len(rss) >= 10
    assert max(rss) - rss[0] > 150 * 1024 * 1024
    assert max(rss) > 0.5 * LIMIT
    assert main["steps"] >= 10 and main["ended"] == "vanished"


def test_oom_kill_in_a_cgroup_of_the_targets_own(
    tmp_path: Path, schema: Dict[str, Any], memory_cgroup: Path
) -> None:
    # GIVEN a target that moves itself into a limited cgroup memprobe is not in (as with
    # `systemd-run --scope -p MemoryMax=...` or a job wrapper)
    out = tmp_path / "r.json"
    join = f'echo $$ > {memory_cgroup / "cgroup.procs"} && exec {sys.executable} "$0"'
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "memprobe",
            "run",
            "-o",
            str(out),
            *FAST,
            "--",
            "sh",
            "-c",
            join,
            str(SCRIPTS / "fault_oom.py"),
        ],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    # THEN the kill is still recognised as the OOM killer's: that cgroup's counter is watched
    assert proc.returncode == 128 + 9, proc.stderr
    record = load(out)
    validate(record, schema)
    assert record["exit"] == {"code": None, "signal": 9, "oom_killed": True}
    main = [p for p in record["processes"] if p["role"] == "main"][0]
    assert max(main["series"]["rss_bytes"]["value"]) > 0.5 * LIMIT


PARENT_MAPS = """
import os, time
time.sleep(4)  # the parent's start-up work is done by then
with open(f"/proc/{os.getppid()}/maps") as f:
    print("statistics loaded:", "scipy" in f.read())
"""


def test_memprobe_takes_no_memory_of_its_own_while_its_target_runs_in_a_limited_cgroup(
    tmp_path: Path, memory_cgroup: Path
) -> None:
    # GIVEN a target that looks, 4 s in, whether memprobe's parent has loaded its statistics
    # (~80 MiB: memory a target filling the cgroup needs, and a second OOM kill's victim)
    script = tmp_path / "maps.py"
    script.write_text(PARENT_MAPS)

    def run(*wrap: str) -> str:
        cmd = [sys.executable, "-m", "memprobe", "run", "--no-live", "-o", "r.json", str(script)]
        proc = subprocess.run(
            [*wrap, *cmd], cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    # WHEN memprobe runs it in a 400 MiB cgroup, and outside it
    join = f'echo $$ > {memory_cgroup / "cgroup.procs"} && exec "$@"'
    inside = run("sh", "-c", join, "sh")
    outside = run()
    # THEN in the cgroup the statistics wait for the target's end; outside they load at once
    assert "statistics loaded: False" in inside
    assert "statistics loaded: True" in outside
