"""Helpers for the fault, bad-input and hostile-string tests: start the real CLI, wait, kill."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from conftest import SCRIPTS, cli_env, load

TARGET = SCRIPTS / "fault_target.py"
FAST = ["--interval", "0.02"]  # step-aligned samples every 20 ms: short runs still have series


def start_cli(
    args: List[str], cwd: Path, env: Optional[Dict[str, str]] = None, **popen: Any
) -> subprocess.Popen[str]:
    """``python -m memprobe ARGS`` in its own session (so a test can signal its group)."""
    return subprocess.Popen(
        [sys.executable, "-m", "memprobe", *args],
        cwd=cwd,
        env=env or cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **popen,
    )


def wait_for(cond: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def wait_ready(
    ready: Path, proc: Optional[subprocess.Popen[Any]] = None, timeout: float = 30.0
) -> int:
    """The target's pid, once it has written its ready file (20 steps done)."""

    def done() -> bool:
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"memprobe exited {proc.returncode} early: {err[-2000:]}")
        return ready.exists()

    wait_for(done, timeout, f"{ready}")
    return int(ready.read_text())


def pid_alive(pid: int) -> bool:
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def target_args(out: Path, ready: Path, steps: int, then: str, *opts: str) -> List[str]:
    return ["run", "-o", str(out), *FAST, *opts, str(TARGET), str(ready), str(steps), then]


def rss_points(record: Dict[str, Any]) -> List[float]:
    mains = [p for p in record["processes"] if p["role"] == "main"]
    assert mains, record["processes"]
    series = mains[0]["series"]
    assert "rss_bytes" in series, sorted(series)
    values: List[float] = series["rss_bytes"]["value"]
    return values


def memprobe_lines(stderr: str) -> List[str]:
    return [line for line in stderr.splitlines() if line.startswith("memprobe")]


def run_plain(args: List[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The same script without memprobe, to compare behaviour."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


__all__ = [
    "TARGET",
    "FAST",
    "start_cli",
    "wait_for",
    "wait_ready",
    "pid_alive",
    "target_args",
    "rss_points",
    "memprobe_lines",
    "run_plain",
    "load",
]
