"""`memprobe report` end to end: the real CLI as a subprocess on golden records and bad input.

The golden records under tests/data/ (``run-v<N>-*.json``) must keep loading
forever: one per schema version and shape, never regenerated to fit the code.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest
from rich.console import Console

from memprobe.record import load, schema_path
from memprobe.render.html import report_html
from memprobe.render.report import render_report, report_json, report_markdown

DATA = Path(__file__).resolve().parent / "data"
GOLDEN = sorted(DATA.glob("run-v*.json"))
EXIT_BAD_INPUT = 2


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


def _one_line_error(r: subprocess.CompletedProcess[str], name: str) -> None:
    assert r.returncode == EXIT_BAD_INPUT, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("memprobe: error:") and name in lines[0], lines[0]


def test_there_are_golden_records() -> None:
    names = {p.name for p in GOLDEN}
    assert {
        "run-v1-synthetic-leaky.json",
        "run-v1-synthetic-fixed.json",
        "run-v1-hostile.json",
    } <= names


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.name)
def test_golden_records_load_validate_and_render(path: Path) -> None:
    record = load(str(path))
    assert record.schema.startswith("memprobe.run/")
    assert record.processes
    if record.schema == "memprobe.run/1" and Path(schema_path()).exists():
        import jsonschema  # type: ignore[import-untyped]

        with open(schema_path()) as f:
            jsonschema.validate(json.loads(path.read_text()), json.load(f))
    render_report(record, Console(file=io.StringIO(), width=80))
    assert report_markdown(record).startswith("## memprobe report")
    assert json.loads(report_json(record))["schema"] == "memprobe.findings/1"
    assert report_html(record).startswith("<!DOCTYPE html>")


def test_lenient_minimal_record_loads() -> None:
    # GIVEN a record with only what a reader needs (hand-written, older writers, other tools)
    record = load(str(DATA / "lenient-v1-minimal.json"))
    # THEN defaults fill the rest and every renderer copes
    assert record.processes[0].role == "main" and record.findings == []
    render_report(record, Console(file=io.StringIO(), width=80))
    assert "rss_bytes" in report_markdown(record)


@pytest.mark.slow
@pytest.mark.parametrize("path", GOLDEN + [DATA / "lenient-v1-minimal.json"], ids=lambda p: p.name)
def test_report_cli_on_every_record(path: Path, tmp_path: Path) -> None:
    r = memprobe("report", str(path), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "memprobe report" in r.stdout


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_report_cli_formats(fmt: str, tmp_path: Path) -> None:
    r = memprobe("report", str(DATA / "run-v1-synthetic-leaky.json"), "--format", fmt, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    if fmt == "json":
        doc = json.loads(r.stdout)
        assert doc["schema"] == "memprobe.findings/1" and len(doc["findings"]) == 4
    else:
        assert r.stdout.startswith("## memprobe report") and "loss\\.item" in r.stdout


@pytest.mark.slow
def test_report_text_shows_finding_and_fix(tmp_path: Path) -> None:
    r = memprobe("report", str(DATA / "run-v1-synthetic-leaky.json"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "LEAK" in out and "__main__.trainer.actor_losses" in out
    assert "fix" in out and "loss.item()" in out
    assert "worker 0 (pid 1001)" in out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "\x1b" not in out  # not a terminal: no escape codes


@pytest.mark.slow
def test_report_html_file(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    r = memprobe("report", str(DATA / "run-v1-hostile.json"), "--html", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "uPlot" in page
    assert "<script>alert(1)" not in page


@pytest.mark.slow
def test_report_html_unwritable(tmp_path: Path) -> None:
    r = memprobe(
        "report",
        str(DATA / "lenient-v1-minimal.json"),
        "--html",
        str(tmp_path / "no" / "such" / "dir" / "r.html"),
        cwd=tmp_path,
    )
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "r.html" in r.stderr


BAD_INPUTS: List[Tuple[str, bytes]] = [
    ("empty.json", b""),
    ("truncated.json", b'{"schema": "memprobe.run/1", "processes": [{"pid": 1, "ser'),
    ("list.json", b"[1, 2, 3]"),
    ("other.json", b'{"name": "not a run", "version": 3}'),
    ("newer.json", b'{"schema": "memprobe.run/99", "processes": []}'),
    ("binary.json", bytes(range(256)) * 4),
    ("badproc.json", b'{"schema": "memprobe.run/1", "processes": [{"pid": "x"}]}'),
    (
        "badseries.json",
        b'{"schema": "memprobe.run/1", "processes": [{"pid": 1, "series": '
        b'{"rss_bytes": {"step": [1], "t": [], "value": [1]}}}]}',
    ),
    ("deep.json", b"[" * 100_000 + b"]" * 100_000),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,content", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_one_line_error(name: str, content: bytes, tmp_path: Path) -> None:
    (tmp_path / name).write_bytes(content)
    _one_line_error(memprobe("report", name, cwd=tmp_path), name)


@pytest.mark.slow
def test_missing_file_is_one_line_error(tmp_path: Path) -> None:
    _one_line_error(memprobe("report", "nope.json", cwd=tmp_path), "nope.json")


@pytest.mark.slow
def test_folder_without_a_run_is_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "empty_dir").mkdir()
    r = memprobe("report", "empty_dir", cwd=tmp_path)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "empty_dir" in r.stderr
