"""The ``memprobe`` command line: parse, call one core function, map errors to exit codes."""

from __future__ import annotations

import sys
from enum import Enum
from typing import List, Optional

import typer

from memprobe import __version__
from memprobe.bootstrap.memprobe_agent.wire import (
    DEFAULT_OVERHEAD_BUDGET,
    DEFAULT_SAMPLE_INTERVAL_S,
)
from memprobe.errors import EXIT_BAD_INPUT, EXIT_LEAK, MemprobeError
from memprobe.record import RecordError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="memprobe — find memory leaks in Python and PyTorch training scripts.\n\n"
    "  memprobe run train.py --lr 3e-4\n\n"
    "  memprobe report run.json --html report.html\n\n"
    "  memprobe diff before.json after.json",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
_argv: List[str] = []


class Fmt(str, Enum):
    text = "text"
    markdown = "markdown"
    json = "json"


class Tracemalloc(str, Enum):
    auto = "auto"
    always = "always"
    off = "off"


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    from memprobe.render._text import clean

    sys.stderr.write(f"memprobe: error: {clean(message, 2000)}\n")
    return typer.Exit(code)


@app.command(
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
    no_args_is_help=True,
)
def run(
    target: List[str] = typer.Argument(
        None,
        metavar="SCRIPT [ARGS]... | -- COMMAND...",
        help="The script and its own arguments, passed through "
        "untouched; or, after --, any command that starts Python.",
    ),
    module: Optional[str] = typer.Option(
        None, "-m", "--module", help="Run a module like python -m."
    ),
    output: Optional[str] = typer.Option(
        None,
        "-o",
        "--output",
        help="Where to write the run record (default: memprobe-<script>-<time>.json here).",
    ),
    fail_on_leak: bool = typer.Option(
        False,
        "--fail-on-leak",
        help=f"Exit {EXIT_LEAK} when the verdict is leak (the target's own failure codes win).",
    ),
    min_bytes_per_step: Optional[float] = typer.Option(
        None,
        "--min-bytes-per-step",
        help="Growth below this many bytes per step never counts as a leak.",
    ),
    python: Optional[str] = typer.Option(
        None,
        "--python",
        help="Interpreter for SCRIPT / -m (default: the active virtualenv's, else memprobe's own).",
    ),
    live: Optional[bool] = typer.Option(
        None,
        "--live/--no-live",
        help="Live table (default: when stdout and stderr are a terminal).",
    ),
    interval: float = typer.Option(
        DEFAULT_SAMPLE_INTERVAL_S,
        "--interval",
        min=0.001,
        help="Minimum seconds between cheap samples at step boundaries.",
    ),
    budget: float = typer.Option(
        DEFAULT_OVERHEAD_BUDGET,
        "--budget",
        min=0.0,
        max=1.0,
        help="Share of wall time the expensive collectors may use.",
    ),
    tracemalloc: Tracemalloc = typer.Option(
        Tracemalloc.auto,
        "--tracemalloc",
        help="auto: trace a window of steps once a signal looks like a leak; always; off.",
    ),
    keep_run_dir: bool = typer.Option(
        False, "--keep-run-dir", help="Keep the raw per-process files after writing the record."
    ),
    step_on: Optional[str] = typer.Option(
        None,
        "--step-on",
        metavar="FILE:FUNCTION|MODULE:QUALNAME",
        help="Each return of this function is a step (train.py:evaluate, "
        "envs.cartpole:CartPole.step), for loops without an optimizer; "
        "optimizer steps then do not count.",
    ),
    fail_collector: Optional[str] = typer.Option(None, "--x-fail-collector", hidden=True),
) -> None:
    """Run a Python program under memprobe: live table, leak verdict, run record.

    Everything after the script name goes to the script. In the script (no-ops without
    memprobe): memprobe.step() marks a step, memprobe.watch(name, obj) follows an object's
    deep size and length, memprobe.mark(label) puts an event on the timeline.

    Exit status: the target's own
    (128+N if it was killed by signal N); 40 with --fail-on-leak when it leaked; 2 when
    memprobe cannot start the run.
    """
    from memprobe.bootstrap.memprobe_agent.wire import SpecError
    from memprobe.commands.run import RunRequest, run_command
    from memprobe.launch.command import LaunchError

    target = list(target or [])
    request = RunRequest(
        target=target,
        module=module,
        passthrough=_after_double_dash(target),
        output=output,
        python=python,
        live=live,
        step_on=step_on,
        fail_on_leak=fail_on_leak,
        keep_run_dir=keep_run_dir,
        sample_interval_s=interval,
        overhead_budget=budget,
        tracemalloc=tracemalloc.value,
        fail_collector=fail_collector,
        min_bytes_per_step=min_bytes_per_step,
    )
    try:
        code = run_command(request)
    except (LaunchError, SpecError) as e:
        raise _fail(str(e)) from None
    raise typer.Exit(code)


def _after_double_dash(target: List[str]) -> bool:
    """True for ``memprobe run [OPTIONS] -- COMMAND...`` (click swallows the ``--``)."""
    if "run" not in _argv or "--" not in _argv:
        return False
    rest = _argv[_argv.index("run") + 1 :]
    if "--" not in rest:
        return False
    return bool(target) and rest[rest.index("--") + 1 :] == target


@app.command()
def report(
    runs: List[str] = typer.Argument(
        ...,
        metavar="RUN...",
        help="A run.json, or a run folder to rebuild. Several (one per node of a multi-node "
        "job) are shown together, ranks labelled by node.",
    ),
    html: Optional[str] = typer.Option(
        None, "--html", help="Also write a self-contained HTML report."
    ),
    fmt: Fmt = typer.Option(Fmt.text, "--format", "-f", help="text, markdown or json (findings)."),
) -> None:
    """Show a run's verdict, findings, holders, projections and fix hints."""
    from memprobe.commands.report import report_command

    try:
        report_command(runs, html, fmt.value)
    except (RecordError, MemprobeError, OSError) as e:
        raise _fail(str(e), getattr(e, "exit_code", EXIT_BAD_INPUT)) from None


@app.command()
def diff(
    before: str = typer.Argument(..., help="The run record before the change."),
    after: str = typer.Argument(..., help="The run record after the change."),
    fmt: Fmt = typer.Option(Fmt.text, "--format", "-f", help="text, markdown or json."),
    html: Optional[str] = typer.Option(None, "--html", help="Also write the diff as HTML."),
    tolerance: float = typer.Option(
        0.25, "--tolerance", min=0.0, help="Rate changes below this fraction count as the same."
    ),
    min_bytes_per_step: float = typer.Option(
        0.0, "--min-bytes-per-step", min=0.0, help="Slower byte leaks never fail the gate."
    ),
    min_count_per_step: float = typer.Option(
        0.0, "--min-count-per-step", min=0.0, help="Slower count leaks never fail the gate."
    ),
    min_confidence: float = typer.Option(
        0.0, "--min-confidence", min=0.0, max=1.0, help="Less certain leaks never fail the gate."
    ),
    fail_on_persisting: bool = typer.Option(
        False, "--fail-on-persisting", help="Also fail when a leak persists (not only new/worse)."
    ),
    strict_signals: bool = typer.Option(
        False, "--strict-signals", help="Gate on every signal's verdict, not only on findings."
    ),
) -> None:
    """Compare two runs signal by signal: fixed, persisting, new, improved, regressed.

    Exit status: 0 no regression; 3 a new or worse leak; 2 unusable input.
    """
    from memprobe.analysis.compare import CompareOptions
    from memprobe.commands.diff import diff_command

    options = CompareOptions(
        rel_tolerance=tolerance,
        min_rate_bytes=min_bytes_per_step,
        min_rate_count=min_count_per_step,
        min_confidence=min_confidence,
        fail_on_persisting=fail_on_persisting,
        strict_signals=strict_signals,
    )
    try:
        code = diff_command(before, after, fmt.value, html, options)
    except (RecordError, MemprobeError, OSError) as e:
        raise _fail(str(e), getattr(e, "exit_code", EXIT_BAD_INPUT)) from None
    raise typer.Exit(code)


@app.command()
def version() -> None:
    """Print memprobe's version."""
    print(__version__)


def main(argv: Optional[List[str]] = None) -> None:
    global _argv
    _argv = list(sys.argv[1:] if argv is None else argv)
    app(args=_argv, prog_name="memprobe")
