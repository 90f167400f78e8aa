"""`memprobe report` / `memprobe diff` on input that is not a usable run: one line on stderr,
a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Dict

import pytest

from conftest import run_cli
from memprobe import record as rec


def _good(tmp: Path) -> Path:
    from recordgen import make_record

    path = tmp / "good.json"
    if not path.exists():
        rec.save(make_record(steps=60), str(path))
    return path


def _write(name: str, data: str | bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)
        return path

    return make


def _truncated(tmp: Path) -> Path:
    text = _good(tmp).read_text()
    path = tmp / "truncated.json"
    path.write_text(text[: len(text) // 2])
    return path


def _newer_schema(tmp: Path) -> Path:
    data = json.loads(_good(tmp).read_text())
    data["schema"] = "memprobe.run/2"
    path = tmp / "newer.json"
    path.write_text(json.dumps(data))
    return path


def _huge(tmp: Path) -> Path:
    path = tmp / "huge.json"
    with open(path, "wb") as f:
        f.truncate(1024**3)  # sparse: 1 GiB that takes no disk
    return path


def _empty_dir(tmp: Path) -> Path:
    path = tmp / "not-a-run"
    path.mkdir()
    (path / "notes.txt").write_text("hello")
    return path


def _garbage_run_dir(tmp: Path) -> Path:
    path = tmp / "garbage.run"
    path.mkdir()
    (path / "proc-123.jsonl").write_bytes(b'\x00\xff garbage\n[1,2]\n{"no": "k"}\n{"k":')
    return path


def _mistyped(field: str, value: object) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        data = json.loads(_good(tmp).read_text())
        target: Any = data
        *outer, last = field.split(".")
        for key in outer:
            target = target[key] if not key.isdigit() else target[int(key)]
        target[last] = value
        path = tmp / f"mistyped-{field}.json"
        path.write_text(json.dumps(data))
        return path

    return make


BAD: Dict[str, Callable[[Path], Path]] = {
    "missing": lambda tmp: tmp / "does-not-exist.json",
    "directory_without_run": _empty_dir,
    "empty": _write("empty.json", ""),
    "truncated": _truncated,
    "not_utf8": _write("binary.json", b"\x89PNG\r\n\x1a\n\x00\xff\xfe"),
    "json_list": _write("list.json", "[1, 2, 3]"),
    "json_string": _write("string.json", '"memprobe.run/1"'),
    "other_object": _write("other.json", '{"name": "package.json", "version": "1.0"}'),
    "schema_not_string": _write("schema-int.json", '{"schema": 1, "processes": []}'),
    "other_schema": _write("otherschema.json", '{"schema": "coverage/7", "processes": []}'),
    "no_processes": _write("noprocs.json", '{"schema": "memprobe.run/1"}'),
    "newer_schema": _newer_schema,
    "huge": _huge,
    "deeply_nested": _write("deep.json", "[" * 200_000 + "]" * 200_000),
    "process_pid_string": _mistyped("processes.0.pid", "1000"),
    "series_lengths_differ": _mistyped("processes.0.series.rss_bytes.t", [0.0]),
    "exit_is_list": _mistyped("exit", [1, 2]),
    "started_at_text": _mistyped("started_at", "yesterday"),
    "findings_not_list": _mistyped("findings", {"a": 1}),
    "garbage_run_dir": _garbage_run_dir,
}


def _assert_one_line_error(proc: object) -> None:
    rc, err = proc.returncode, proc.stderr  # type: ignore[attr-defined]
    assert rc != 0, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("memprobe: error: "), lines
    assert proc.stdout == ""  # type: ignore[attr-defined]


# what the one line must say for some of them, so a person knows what to do next
WORDS = {
    "missing": "No such file",
    "empty": "is empty",
    "truncated": "not valid JSON",
    "newer_schema": "upgrade memprobe",
    "huge": "MiB",
    "directory_without_run": "no memprobe run",
    "deeply_nested": "nests too deeply",
}


# the kinds of input the issue names, each through the real CLI; the rest in-process below
THROUGH_CLI = [
    "missing",
    "directory_without_run",
    "empty",
    "truncated",
    "not_utf8",
    "json_list",
    "other_object",
    "newer_schema",
    "huge",
    "deeply_nested",
    "process_pid_string",
    "garbage_run_dir",
]


@pytest.mark.slow
@pytest.mark.parametrize("case", THROUGH_CLI)
def test_report_refuses_bad_input_in_one_line(tmp_path: Path, case: str) -> None:
    path = BAD[case](tmp_path)
    proc = run_cli(["report", str(path)], cwd=tmp_path, timeout=60)
    _assert_one_line_error(proc)
    assert WORDS.get(case, "") in proc.stderr


@pytest.mark.parametrize("case", sorted(set(BAD) - set(THROUGH_CLI)))
def test_loader_refuses_other_shapes_in_one_line(tmp_path: Path, case: str) -> None:
    # what `report` calls first: a RecordError of one line (the CLI prints it, as above)
    with pytest.raises(rec.RecordError) as e:
        rec.load(str(BAD[case](tmp_path)))
    assert "\n" not in str(e.value) and str(e.value)


@pytest.mark.slow
@pytest.mark.parametrize(
    "case,side",
    [
        ("missing", "before"),
        ("truncated", "after"),
        ("newer_schema", "before"),
        ("huge", "after"),
        ("directory_without_run", "after"),
    ],
)
def test_diff_refuses_bad_input_in_one_line(tmp_path: Path, case: str, side: str) -> None:
    bad, good = BAD[case](tmp_path), _good(tmp_path)
    args = [str(bad), str(good)] if side == "before" else [str(good), str(bad)]
    proc = run_cli(["diff", *args], cwd=tmp_path, timeout=60)
    _assert_one_line_error(proc)
    assert WORDS[case] in proc.stderr


@pytest.mark.slow
def test_html_output_to_a_missing_folder_is_one_line(tmp_path: Path) -> None:
    good = _good(tmp_path)
    proc = run_cli(
        ["report", str(good), "--html", str(tmp_path / "no" / "r.html")], cwd=tmp_path, timeout=60
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    err = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("memprobe: error: "), err


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_unreadable_file(tmp_path: Path) -> None:
    path = _good(tmp_path)
    path.chmod(0)
    proc = run_cli(["report", str(path)], cwd=tmp_path, timeout=60)
    _assert_one_line_error(proc)
