"""``%%memprobe``: the cell magic that tracks one cell (``%load_ext memprobe``).

::

    %load_ext memprobe

    %%memprobe
    for batch in loader:
        ...
        optimizer.step()

prints the verdict and the findings when the cell ends, as ``memprobe run`` does, and
leaves the ``Run`` in the notebook as ``_memprobe_run`` (``_memprobe_run.report()``,
``_memprobe_run.save("run.json")``). Options: ``--report`` prints the full report,
``--save FILE`` writes run.json, ``--interval S`` spaces cheap samples (default 0.1 s).

It sees what ``memprobe.track()`` sees: this kernel's process only, from the cell's start.
IPython is imported only by IPython itself: memprobe does not depend on it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any, List, Optional

from memprobe.inprocess import Run, TrackError, TrackOptions

__all__ = ["load_ipython_extension", "memprobe_cell", "RESULT_NAME"]

RESULT_NAME = "_memprobe_run"


def load_ipython_extension(ipython: Any) -> None:
    """Called by ``%load_ext memprobe``: registers the ``%%memprobe`` cell magic."""
    ipython.register_magic_function(
        lambda line, cell: memprobe_cell(ipython, line, cell),
        magic_kind="cell",
        magic_name="memprobe",
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="%%memprobe", add_help=False)
    p.add_argument("--report", action="store_true", help="print the full report")
    p.add_argument("--save", metavar="FILE", help="write run.json")
    p.add_argument("--interval", type=float, default=0.1, help="seconds between samples")
    return p


def parse_line(line: str) -> argparse.Namespace:
    try:
        return _parser().parse_args(shlex.split(line))
    except SystemExit:  # argparse's way to say the line is wrong
        raise TrackError(
            f"%%memprobe: cannot read options {line!r}; use --report, --save FILE, --interval S"
        ) from None


def memprobe_cell(ipython: Any, line: str, cell: str, out: Optional[Any] = None) -> Optional[Run]:
    """Run ``cell`` in ``ipython`` under ``memprobe.track()``; print verdict and findings."""
    out = out if out is not None else sys.stdout
    args = parse_line(line)
    run = Run(TrackOptions(sample_interval_s=args.interval))
    with run:
        ipython.run_cell(cell)  # as %%capture runs its cell: errors shown by IPython
    ipython.user_ns[RESULT_NAME] = run
    if run.record is None:
        out.write(f"memprobe: could not judge this cell: {run.analysis_error}\n")
        return run
    out.write(run.report() if args.report else run.summary())
    notes: List[str] = []
    if args.save:
        run.save(args.save)
        notes.append(f"run record → {args.save}")
    notes.append(f"details: {RESULT_NAME}.report()")
    out.write("memprobe: " + "; ".join(notes) + "\n")
    return run
