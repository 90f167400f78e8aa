"""Progress bars of the target (tqdm, Lightning) stay visible under memprobe."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memprobe.collect.state import RunState
from memprobe.render.live import PlainDisplay

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.mark.slow
def test_live_table_shows_a_progress_bar_while_it_runs(tmp_path: Path) -> None:
    # GIVEN a target that redraws one progress line with "\r" for ~3 s, on a terminal
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "LINES": "40", "TERM": "xterm"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memprobe",
            "run",
            "-o",
            str(tmp_path / "r.json"),
            str(SCRIPTS / "progress_bar.py"),
        ],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=tmp_path,
        close_fds=True,
    )
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the slave side closed: the run is over
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(master)
    text = out.decode("utf-8", "replace")
    # THEN the bar's intermediate states were drawn while it ran, not only its last line
    assert proc.returncode == 0, text[-2000:]
    drawn = {int(p) for p in re.findall(r"training: +(\d+)%", text)}
    assert len({p for p in drawn if 0 < p < 100}) >= 5, (sorted(drawn), text[-3000:])
    assert text.index("training:") < text.index("done")


def test_plain_progress_line_starts_its_own_line_after_an_unfinished_bar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN stderr redirected to a file (write-only, as `2> log` opens it) where the target
    # left a bar without its newline
    log = tmp_path / "log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(fd, b"epoch 1:  40%|####      |\r")
    stream = io.TextIOWrapper(io.FileIO(fd, "w", closefd=True), write_through=True)
    monkeypatch.setattr(sys, "stderr", stream)
    display = PlainDisplay(every_s=0.0)
    state = RunState(command=["python", "t.py"], cwd=str(tmp_path), started_at=time.time())
    # WHEN memprobe writes its progress line, then again after a finished line
    display.update(state)
    os.write(fd, b"epoch 1: 100%\n")
    display.update(state)
    stream.close()
    lines = log.read_bytes().split(b"\n")
    # THEN each progress line is a line of its own, with no blank line after a finished one
    assert lines[0] == b"epoch 1:  40%|####      |\r"
    assert lines[1].startswith(b"memprobe: ")
    assert lines[2] == b"epoch 1: 100%"
    assert lines[3].startswith(b"memprobe: ")
