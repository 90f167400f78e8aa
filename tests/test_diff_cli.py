"""`memprobe diff` end to end: exit codes for CI, formats, HTML, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memprobe.analysis.compare import EXIT_BAD_INPUT, EXIT_OK, EXIT_REGRESSION

pytestmark = pytest.mark.slow  # end to end: the real CLI as a subprocess

DATA = Path(__file__).resolve().parent / "data"
LEAKY = str(DATA / "run-v1-synthetic-leaky.json")
FIXED = str(DATA / "run-v1-synthetic-fixed.json")


def memprobe(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", COLUMNS="80")
    return subprocess.run(
        [sys.executable, "-m", "memprobe", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_fixed_exits_ok(tmp_path: Path) -> None:
    r = memprobe("diff", LEAKY, FIXED, cwd=tmp_path)
    assert r.returncode == EXIT_OK, r.stderr
    assert "NO REGRESSION" in r.stdout and "fixed" in r.stdout
    assert all(len(line) <= 80 for line in r.stdout.splitlines())


def test_reverse_order_is_a_regression(tmp_path: Path) -> None:
    r = memprobe("diff", FIXED, LEAKY, cwd=tmp_path)
    assert r.returncode == EXIT_REGRESSION, (r.stdout, r.stderr)
    assert "REGRESSION" in r.stdout and "new" in r.stdout
    assert "Traceback" not in r.stderr


def test_same_leak_persists_and_passes(tmp_path: Path) -> None:
    r = memprobe("diff", LEAKY, LEAKY, cwd=tmp_path)
    assert r.returncode == EXIT_OK
    assert "persisting" in r.stdout


@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_formats(fmt: str, tmp_path: Path) -> None:
    r = memprobe("diff", FIXED, LEAKY, "--format", fmt, cwd=tmp_path)
    assert r.returncode == EXIT_REGRESSION
    if fmt == "json":
        doc = json.loads(r.stdout)
        assert doc["exit_code"] == EXIT_REGRESSION and doc["result"] == "regression"
        assert {s["status"] for s in doc["signals"]} == {"new"}
    else:
        assert r.stdout.startswith("## memprobe diff") and "**new**" in r.stdout


def test_html(tmp_path: Path) -> None:
    out = tmp_path / "diff.html"
    r = memprobe("diff", LEAKY, str(DATA / "run-v1-hostile.json"), "--html", str(out), cwd=tmp_path)
    assert r.returncode in (EXIT_OK, EXIT_REGRESSION), r.stderr
    page = out.read_text(encoding="utf-8")
    assert '"kind":"diff"' in page and "<script>alert(1)" not in page


def test_bad_input_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "trunc.json").write_text(Path(LEAKY).read_text()[:500])
    for args, name in (
        ((LEAKY, "missing.json"), "missing.json"),
        (("trunc.json", FIXED), "trunc.json"),
    ):
        r = memprobe("diff", *args, cwd=tmp_path)
        assert r.returncode == EXIT_BAD_INPUT, (r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and name in lines[0] and lines[0].startswith("memprobe: error:")
