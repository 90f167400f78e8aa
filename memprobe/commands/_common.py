"""What the commands share: the stderr console, reading a run, writing and printing output."""

from __future__ import annotations

import os
import sys
from typing import Callable

from rich.console import Console

from memprobe import record as rec
from memprobe.errors import MemprobeError
from memprobe.render.fmt import safe_text


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def load_run(path: str) -> rec.RunRecord:
    """A run.json, or a run folder rebuilt (and analysed) from its per-process files."""
    if os.path.isdir(path):
        from memprobe.collect.rebuild import rebuild

        record = rebuild(path)
        try:
            from memprobe.analysis.finalize import finalize

            return finalize(record)
        except Exception as e:  # noqa: BLE001 - a rebuilt run must still show its raw series
            stderr_console().print(
                safe_text(
                    f"memprobe: analysis failed ({type(e).__name__}: {e}); "
                    "showing the raw series only",
                    style="yellow",
                )
            )
            return record
    return rec.load(path)


def write_text(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise MemprobeError(f"cannot write {path}: folder {directory} does not exist")
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        raise MemprobeError(f"cannot write {path}: {e.strerror or e}") from None


def emit(
    fmt: str,
    markdown: Callable[[], str],
    json: Callable[[], str],
    render: Callable[[Console], None],
) -> None:
    """The report or diff on stdout in the format asked for (text: rendered by Rich)."""
    if fmt == "markdown":
        sys.stdout.write(markdown())
    elif fmt == "json":
        sys.stdout.write(json())
    else:
        render(Console(highlight=False))
