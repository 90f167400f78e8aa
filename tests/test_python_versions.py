"""The agent runs in the target's interpreter: every Python this machine has, end to end.

Supported (``wire.MIN_PYTHON`` and newer): ``memprobe run --python X`` profiles a tiny leak
with the agent inside X. Older: ``--python X`` is refused before anything runs (exit 2, one
line), and an old interpreter that memprobe could not check first (started by a shell
script) runs without an agent, which the run says instead of leaving an empty record.
Interpreters are looked for on PATH (``python3.8``) and under pyenv; absent ones skip.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict, Optional, Tuple

import pytest

from conftest import SCRIPTS, load, run_cli
from memprobe.bootstrap.memprobe_agent import wire

pytestmark = pytest.mark.slow

VERSIONS = [(2, 7)] + [(3, minor) for minor in range(6, 14)]


@functools.cache
def find_python(version: Tuple[int, int]) -> Optional[str]:
    """An interpreter of that version that runs: pyenv's newest X.Y.*, else ``pythonX.Y`` on
    PATH (a pyenv shim on PATH may name a version it cannot run: each one is tried)."""
    name = "python{}.{}".format(*version)
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = sorted(
        glob.glob(os.path.join(root, "versions", "{}.{}.*".format(*version), "bin", name))
    )
    candidates = list(reversed(found)) + [p for p in [shutil.which(name)] if p]
    probe = "import sys; sys.stdout.write('%d.%d' % tuple(sys.version_info[:2]))"
    for python in candidates:
        try:
            out = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode == 0 and out.stdout == "{}.{}".format(*version):
            return python
    return None


def _python(version: Tuple[int, int]) -> str:
    python = find_python(version)
    if python is None:
        pytest.skip("no Python {}.{} on this machine".format(*version))
    return python


SUPPORTED = [v for v in VERSIONS if v >= wire.MIN_PYTHON]
TOO_OLD = [v for v in VERSIONS if v < wire.MIN_PYTHON]


def _ids(v: Tuple[int, int]) -> str:
    return "py{}.{}".format(*v)


@pytest.mark.parametrize("version", SUPPORTED, ids=_ids)
def test_supported_python_is_profiled(tmp_path: Path, version: Tuple[int, int]) -> None:
    # GIVEN a tiny leak and an interpreter the agent supports
    python = _python(version)
    out = tmp_path / "run.json"
    # WHEN memprobe runs it with that interpreter
    proc = run_cli(
        ["run", "--no-live", "-o", str(out), "--python", python, str(SCRIPTS / "tiny_leak.py")],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = load(out)
    main = record["processes"][0]
    # THEN the agent ran inside it: its version, every step, samples and censuses
    assert main["python"].startswith("{}.{}.".format(*version)), main["python"]
    assert main["has_agent"] and main["steps"] == 300
    assert len(main["series"]["rss_bytes"]["value"]) >= 5
    assert len(main["census"]) >= 2
    assert not [e for e in record["events"] if e["kind"] in ("agent_error", "collector_off")]
    # AND the leak is found where it is held
    holders = [(f.get("culprit") or {}).get("holder") for f in record["findings"]]
    assert record["verdict"] == "leak" and "__main__.kept" in holders, (record["verdict"], holders)


@pytest.mark.parametrize("version", TOO_OLD, ids=_ids)
def test_too_old_python_is_refused_before_the_run(tmp_path: Path, version: Tuple[int, int]) -> None:
    # GIVEN an interpreter older than the agent supports
    python = _python(version)
    out = tmp_path / "run.json"
    # WHEN memprobe is asked to run a script with it
    proc = run_cli(
        ["run", "--no-live", "-o", str(out), "--python", python, str(SCRIPTS / "tiny_leak.py")],
        cwd=tmp_path,
    )
    # THEN it refuses in one line that says what to do, before running anything
    assert proc.returncode == 2
    assert "needs Python {}.{} or newer".format(*wire.MIN_PYTHON) in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists() and not list(tmp_path.glob("*.run*"))


@pytest.mark.parametrize("version", TOO_OLD, ids=_ids)
def test_too_old_python_behind_a_shell_is_reported(
    tmp_path: Path, version: Tuple[int, int]
) -> None:
    # GIVEN an old interpreter started by a shell, which memprobe cannot check beforehand
    python = _python(version)
    out = tmp_path / "run.json"
    command = f"exec {python} {SCRIPTS / 'tiny_leak.py'}"
    # WHEN memprobe runs the shell command
    proc = run_cli(["run", "--no-live", "-o", str(out), "--", "sh", "-c", command], cwd=tmp_path)
    # THEN the target runs as it would (no agent), and memprobe says why there are no samples
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "done" in proc.stdout
    assert "memprobe: warning:" in proc.stderr and "older than memprobe's agent" in proc.stderr
    record = load(out)
    events: Dict[str, str] = {e["kind"]: e["message"] for e in record["events"]}
    assert "older than memprobe's agent supports" in events.get("agent_error", "")
