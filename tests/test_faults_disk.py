"""Unwritable or full disks: a clear error before the target starts where possible, and never
a half-written run.json. Also the permissions of what memprobe writes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest
from faultutil import FAST, target_args

from conftest import cli_env, load, run_cli, validate
from memprobe import record as rec


def _mount_tmpfs(where: Path, options: str) -> None:
    where.mkdir()
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True, text=True
    )
    if res.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here ({res.stderr.strip() or 'not root'}); "
            "needs root or CAP_SYS_ADMIN"
        )


def _umount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 512 KiB tmpfs: the target can fill it."""
    where = tmp_path / "small"
    _mount_tmpfs(where, "size=512k,mode=0755")
    yield where
    _umount(where)


@pytest.fixture
def unwritable_dir(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "ro"
    if os.geteuid() != 0:
        where.mkdir()
        where.chmod(0o500)
        yield where
        where.chmod(0o700)
        return
    _mount_tmpfs(where, "ro,size=64k")  # root ignores modes: a read-only mount stops it
    yield where
    _umount(where)


def _refused_before_start(
    proc: subprocess.CompletedProcess[str], marker: Path, expect: str
) -> None:
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("memprobe: error: ") and expect in lines[0], lines
    assert "Traceback" not in proc.stderr
    assert not marker.exists(), "the target was started"


@pytest.mark.slow
@pytest.mark.parametrize("case", ["missing_folder", "is_directory", "unwritable"])
def test_bad_output_path_fails_before_the_target_starts(
    tmp_path: Path, case: str, request: pytest.FixtureRequest
) -> None:
    marker = tmp_path / "started"
    if case == "missing_folder":
        out, expect = tmp_path / "no" / "such" / "r.json", "does not exist"
    elif case == "is_directory":
        out, expect = tmp_path, "is a directory"
    else:
        out, expect = request.getfixturevalue("unwritable_dir") / "r.json", "cannot write"
    proc = run_cli(target_args(out, marker, 25, "exit:0"), cwd=tmp_path, timeout=60)
    _refused_before_start(proc, marker, expect)
    assert not list(tmp_path.glob("**/*.run"))


@pytest.mark.slow
def test_disk_full_during_the_run_keeps_the_folder_and_says_how_to_rebuild(
    tmp_path: Path, small_disk: Path, schema: Dict[str, Any]
) -> None:
    # GIVEN a target that fills the disk holding the output before it exits
    out, marker = small_disk / "r.json", tmp_path / "ready"
    proc = run_cli(target_args(out, marker, 25, f"fill:{small_disk}"), cwd=tmp_path, timeout=60)
    # THEN memprobe says it cannot write the record and where the data is; non-zero exit
    assert "filled the disk" in proc.stdout
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    run_dir = small_disk / "r.run"
    assert f"memprobe report {run_dir}" in proc.stderr
    # AND there is no half-written record and no temp file left behind
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler", "r.run"]
    # AND once there is room again the folder rebuilds into a valid record
    (small_disk / "filler").unlink()
    rep = run_cli(["report", str(run_dir), "--format", "json"], cwd=tmp_path, timeout=60)
    assert rep.returncode == 0, rep.stderr
    from memprobe.collect.rebuild import rebuild

    record = rebuild(str(run_dir)).to_json()
    validate(record, schema)
    main = [p for p in record["processes"] if p["role"] == "main"][0]
    assert main["steps"] >= 10 and len(main["series"]["rss_bytes"]["value"]) >= 5


_SAVE_UNDER_FSIZE_LIMIT = """
import resource, signal, sys
from memprobe import record as rec
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
r = rec.load(sys.argv[1])
try:
    rec.save(r, sys.argv[2])
except OSError as e:
    print("OSError", e.errno)
"""


@pytest.mark.slow
def test_a_failing_save_leaves_no_partial_file_and_the_old_record_intact(tmp_path: Path) -> None:
    # GIVEN a record larger than the file-size limit the writer runs under (a disk-full stand-in
    # that needs no root), and an older run.json at the target path
    from recordgen import make_record

    big = tmp_path / "big.json"
    rec.save(make_record(steps=400), str(big))
    assert big.stat().st_size > 4096
    out = tmp_path / "out" / "run.json"
    out.parent.mkdir()
    out.write_text('{"old": true}')
    res = subprocess.run(
        [sys.executable, "-c", _SAVE_UNDER_FSIZE_LIMIT, str(big), str(out)],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
    )
    # THEN save raises, the old file is untouched and no temp file is left
    assert res.stdout.strip() == "OSError 27", res.stderr  # EFBIG
    assert out.read_text() == '{"old": true}'
    assert sorted(p.name for p in out.parent.iterdir()) == ["run.json"]


def test_non_finite_numbers_from_analysis_do_not_cost_the_run(
    tmp_path: Path, schema: Dict[str, Any]
) -> None:
    # GIVEN a record whose analysis produced NaN and infinity
    import dataclasses

    from recordgen import make_record

    r = make_record(steps=50, leak_bytes_per_step=1e6)
    f = dataclasses.replace(r.findings[0], slope_per_step=float("nan"), slope_per_s=float("inf"))
    bad = rec.SignalSummary(ci_low=float("-inf"))
    r = dataclasses.replace(r, findings=[f], signals={"1": {"x": bad}})
    # WHEN it is saved THEN it is valid JSON with null in their place, and loads again
    path = tmp_path / "r.json"
    rec.save(r, str(path))
    data = json.loads(path.read_text())
    assert data["findings"][0]["slope_per_step"] is None
    assert data["signals"]["1"]["x"]["ci_low"] is None
    validate(data, schema)
    assert rec.load(str(path)).findings[0].slope_per_s is None


@pytest.mark.slow
def test_run_folder_0700_files_0600_even_with_umask_0(tmp_path: Path) -> None:
    out, ready = tmp_path / "r.json", tmp_path / "ready"
    proc = subprocess.run(
        [
            "sh",
            "-c",
            'umask 0 && exec "$@"',
            "sh",
            sys.executable,
            "-m",
            "memprobe",
            *target_args(out, ready, 25, "exit:0", "--keep-run-dir"),
        ],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "r.run"
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    files = list(run_dir.iterdir())
    assert any(p.name.startswith("proc-") for p in files)
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p.name
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert load(out)["exit"]["code"] == 0


@pytest.mark.slow
def test_record_and_run_folder_are_rewritten_not_followed(tmp_path: Path) -> None:
    # GIVEN an existing run.json and a stale run folder of an earlier run at the same path
    out, ready = tmp_path / "r.json", tmp_path / "ready"
    out.write_text("stale")
    (tmp_path / "r.run").mkdir()
    proc = run_cli(target_args(out, ready, 25, "exit:0", *FAST), cwd=tmp_path, timeout=60)
    # THEN the record is replaced whole and the stale folder is left alone (a new one is used)
    assert proc.returncode == 0, proc.stderr
    assert load(out)["exit"]["code"] == 0
    assert (tmp_path / "r.run").is_dir() and not (tmp_path / "r.run.1").exists()
