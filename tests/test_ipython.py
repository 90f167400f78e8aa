"""The %%memprobe cell magic, in a real IPython (a subprocess, as a notebook kernel runs it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import cli_env
from memprobe.inprocess import TrackError
from memprobe.ipython import parse_line

LEAKY_CELL = """\
%%memprobe --interval 0 --save {out}
import time
import memprobe


class Row:
    def __init__(self):
        self.cells = list(range(10))


HISTORY = []
for i in range(300):
    HISTORY.append(Row())
    time.sleep(0.003)
    memprobe.step()
"""

CLEAN_CELL = """\
import time
import memprobe

for i in range(300):
    rows = [list(range(10)) for _ in range(20)]
    time.sleep(0.003)
    memprobe.step()
"""


def _ipython(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("IPython")
    argv = [sys.executable, "-m", "IPython", "--quick", "--no-banner", "--colors=nocolor"]
    return subprocess.run(
        [*argv, *args, str(script)],
        capture_output=True,
        text=True,
        timeout=240,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        cwd=script.parent,
    )


def test_cell_magic_prints_the_leak_and_its_holder(tmp_path: Path) -> None:
    # GIVEN a notebook cell under %%memprobe that keeps one object a step
    out = tmp_path / "cell.json"
    script = tmp_path / "cell.ipy"
    script.write_text(LEAKY_CELL.format(out=out))
    # WHEN IPython runs it with the extension loaded
    proc = _ipython(script, "--ext", "memprobe")
    # THEN the verdict and the holder are printed, and the record is written
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verdict LEAK" in proc.stdout, proc.stdout + proc.stderr
    assert "__main__.HISTORY" in proc.stdout
    assert json.loads(out.read_text())["verdict"] == "leak"


@pytest.mark.slow
def test_load_ext_then_a_clean_cell_and_the_run_left_behind(tmp_path: Path) -> None:
    # GIVEN %load_ext memprobe, then a cell that frees what it allocates
    script = tmp_path / "session.ipy"
    script.write_text(
        "%load_ext memprobe\n"
        f"get_ipython().run_cell({('%%memprobe --interval 0' + chr(10) + CLEAN_CELL)!r})\n"
        "import threading\n"
        "print('RESULT', _memprobe_run.verdict, "
        "[t.name for t in threading.enumerate() if t.name.startswith('memprobe')])\n"
    )
    proc = _ipython(script)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verdict LEAK" not in proc.stdout, proc.stdout
    result = [line for line in proc.stdout.splitlines() if line.startswith("RESULT")]
    assert result and result[0].split()[1] in ("no_leak", "inconclusive"), proc.stdout
    assert result[0].endswith("[]")  # no thread of memprobe's left


def test_ipython_stays_optional() -> None:
    # importing memprobe and its magic module imports no IPython
    code = "import sys, memprobe, memprobe.ipython; print('IPython' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "False", proc.stderr


def test_magic_options() -> None:
    args = parse_line("--report --save out.json --interval 0.5")
    assert (args.report, args.save, args.interval) == (True, "out.json", 0.5)
    assert parse_line("").interval == 0.1
    with pytest.raises(TrackError, match="--report"):
        parse_line("--bogus")
