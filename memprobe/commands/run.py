"""``memprobe run``: launch the target, then analyse, write and summarise its record."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from rich.console import Console
from rich.text import Text

from memprobe import record as rec
from memprobe.bootstrap.memprobe_agent import wire
from memprobe.commands._common import stderr_console
from memprobe.errors import EXIT_BAD_INPUT, EXIT_LEAK
from memprobe.launch import runner
from memprobe.launch.command import LaunchError, build_command, check_command, default_python
from memprobe.launch.rundir import RunOptions, prepare_run_dir
from memprobe.launch.runner import RunOutcome

if TYPE_CHECKING:
    from memprobe.analysis import DetectOptions
from memprobe.render.fmt import fmt_bytes, headline_order, safe_text
from memprobe.render.live import LiveDisplay, PlainDisplay

# events that mean some process was not profiled: said after the verdict, not only recorded
TROUBLE_EVENTS = ("agent_error", "wire_mismatch")


@dataclass(frozen=True)
class RunRequest:
    """``memprobe run`` as parsed: what to run and how."""

    target: List[str]  # the script and its arguments, or a whole command (``passthrough``)
    module: Optional[str] = None  # -m MODULE: target holds its arguments
    passthrough: bool = False  # ``memprobe run [OPTIONS] -- COMMAND...``
    output: Optional[str] = None  # default: memprobe-<stem>-<time>.json
    python: Optional[str] = None  # default: the active virtualenv's, else memprobe's own
    live: Optional[bool] = None  # default: when stdout and stderr are a terminal
    step_on: Optional[str] = None  # a SPEC: each return of that function is a step
    fail_on_leak: bool = False
    keep_run_dir: bool = False
    sample_interval_s: float = wire.DEFAULT_SAMPLE_INTERVAL_S
    overhead_budget: float = wire.DEFAULT_OVERHEAD_BUDGET
    tracemalloc: str = "auto"
    fail_collector: Optional[str] = None  # test-only, see --x-fail-collector
    min_bytes_per_step: Optional[float] = None  # growth below this never counts as a leak


def run_command(request: RunRequest) -> int:
    """Run the target under memprobe, write its record, say the verdict; returns the exit
    code. Raises LaunchError (or wire.SpecError for --step-on) when the run cannot start."""
    out = request.output or default_output(request)
    interpreter = request.python or default_python()
    extra = {}
    if request.step_on is not None:
        wire.parse_spec(request.step_on)  # a bad SPEC fails here, not in every process
        extra["step_on"] = request.step_on
    command = _command(request, interpreter)
    run_dir = prepare_run_dir(out)
    options = RunOptions(
        output=out,
        sample_interval_s=request.sample_interval_s,
        overhead_budget=request.overhead_budget,
        tracemalloc=request.tracemalloc,
        fail_collector=request.fail_collector,
        extra_config=extra,
    )
    detect = _detect_options(request.min_bytes_per_step)  # after the checks: analysis is heavy
    display = make_display(request.live, detect)
    # Ctrl-C belongs to the target (same process group); after it, finish lets a second one
    # skip the analysis but never the record. A handler, not SIG_IGN: an ignored SIGINT
    # would be inherited and the target would never see its KeyboardInterrupt.
    signal.signal(signal.SIGINT, _ignore_signal)
    try:
        outcome = runner.run(command, options, run_dir, display, on_start=_warm_up_analysis)
    except LaunchError:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    code, verdict = finish(outcome, out, detect, request.keep_run_dir)
    if code == 0 and request.fail_on_leak and verdict == "leak":
        code = EXIT_LEAK
    return code


def default_output(request: RunRequest) -> str:
    """memprobe-<script or module>-<time>.json, here."""
    stem = "module" if request.module else "run"
    target = request.target
    if request.module:
        stem = request.module.rsplit(".", 1)[-1]
    elif target:
        name = target[-1 if request.passthrough else 0]
        stem = os.path.splitext(os.path.basename(name))[0] or "run"
    return f"memprobe-{stem}-{time.strftime('%Y%m%d-%H%M%S')}.json"


def _command(request: RunRequest, interpreter: str) -> List[str]:
    """The argv to spawn, checked (LaunchError says what is wrong)."""
    if request.passthrough:
        command = list(request.target)
        check_command(command, None)
        return command
    command = build_command(request.target, request.module, interpreter)
    check_command(command, None if request.module else request.target[0])
    return command


def _ignore_signal(signum: int, frame: object) -> None:
    pass


def _warm_up_analysis() -> None:
    """Import the statistics (scipy, about a second) on a thread of its own while the target
    runs: not before it starts, and not after it ends, where a user would wait for it."""

    def load() -> None:
        try:
            from memprobe import analysis

            analysis.warm_up()
        except Exception:  # noqa: BLE001 - the analysis at the end imports again and reports
            pass

    threading.Thread(target=load, name="memprobe-warm-up", daemon=True).start()


def _detect_options(min_bytes_per_step: Optional[float]) -> DetectOptions:
    from memprobe.analysis import DetectOptions

    if min_bytes_per_step is None:
        return DetectOptions()
    return DetectOptions(min_bytes_per_step=min_bytes_per_step)


def make_display(live: Optional[bool], detect: Any) -> Any:
    if live is None:
        live = sys.stdout.isatty() and sys.stderr.isatty()
    if not live:
        return PlainDisplay()
    from memprobe.render import livejudge

    return LiveDisplay(stderr_console(), judge=livejudge.make(detect))


def finish(outcome: RunOutcome, output: str, detect: Any, keep_run_dir: bool) -> Tuple[int, str]:
    """Analyse, write the record, say where it went. Returns (exit code, verdict)."""
    console = stderr_console()
    record = outcome.record
    # SIGINT is ignored while the target runs (see run_command); now one Ctrl-C skips the analysis
    previous = signal.getsignal(signal.SIGINT)

    def interrupt_once(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGINT, previous)  # before raising: a second one cannot land
        raise KeyboardInterrupt  # in the except clause below

    # The Ctrl-C may land between any two bytecodes from the moment the handler is in: in
    # the try before the analysis starts, or while an analysis error is being handled. So
    # the handler goes in inside the outer try, the inner except (a KeyboardInterrupt is no
    # Exception: it passes through) only keeps the error, and the messages wait until the
    # handler is out again (a Ctrl-C a few bytecodes after the handler went in, outside
    # the try, once lost a record under a storm of them).
    interrupted, failure = False, None
    try:
        try:
            signal.signal(signal.SIGINT, interrupt_once)
            from memprobe.analysis.finalize import finalize  # scipy: only once there is a run

            record = finalize(record, detect)
        except Exception as e:  # noqa: BLE001 - never lose the run to an analysis bug
            failure = e
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGINT, previous)  # and nothing interrupts the writing
    if interrupted:
        console.print(Text("memprobe: analysis interrupted; the record has the raw series only"))
    elif failure is not None:
        console.print(
            safe_text(  # names from the target may be in the message: never raw escapes
                f"memprobe: analysis failed ({type(failure).__name__}: {failure}); "
                "the record has the raw series only",
                style="yellow",
            )
        )
    try:
        rec.save(record, output)
    except OSError as e:
        console.print(
            safe_text(
                f"memprobe: error: cannot write {output}: {e.strerror or e}. "
                f"Everything sampled is in {outcome.run_dir}: "
                f"memprobe report {outcome.run_dir}",
                style="red",
            )
        )
        return (outcome.exit_code or EXIT_BAD_INPUT), record.verdict
    if not keep_run_dir:
        shutil.rmtree(outcome.run_dir, ignore_errors=True)
    print_summary(record, console)
    size = os.path.getsize(output)
    # the default output name comes from the script's file name: clean it like target text
    console.print(safe_text(f"memprobe: run record → {output} ({fmt_bytes(size)})", style="dim"))
    return outcome.exit_code, record.verdict


def print_summary(record: rec.RunRecord, console: Console) -> None:
    style = {"leak": "bold red", "no_leak": "bold green"}.get(record.verdict, "bold yellow")
    line = Text("memprobe: verdict ")
    line.append(record.verdict.replace("_", " ").upper(), style=style)
    if record.exit.signal:
        line.append(f" · target killed by signal {record.exit.signal}")
        if record.exit.oom_killed:
            line.append(" (OOM killer)", style="red")
        elif record.exit.oom_killed is None and record.exit.signal == 9:
            line.append(" (OOM killer: unknown, no readable cgroup counter)", style="dim")
    elif record.exit.code:
        line.append(f" · target exited {record.exit.code}")
    console.print(line)
    # processes whose agent did not start (an interpreter too old, another memprobe's wire)
    trouble = [e for e in record.events if e.kind in TROUBLE_EVENTS]
    for e in trouble[:3]:
        console.print(safe_text(f"memprobe: warning: {e.message}", limit=400, style="yellow"))
    if len(trouble) > 3:
        console.print(Text(f"  … {len(trouble) - 3} more; see memprobe report", style="dim"))
    for e in record.events:
        if e.kind in ("step_on_unmatched", "step_on_error"):
            console.print(safe_text(f"memprobe: {e.message}", style="yellow", limit=300))
    # one entry per culprit: its first finding in full, the signals that agree in one line
    groups: Dict[str, List[rec.Finding]] = {}
    for f in record.findings:
        if f.verdict == "leak" or f.kind == "fragmentation":
            key = f"{f.pid}|{f.holder}|{f.culprit_type}" if f.culprit else f"{f.pid}|{f.signal}"
            groups.setdefault(key, []).append(f)
    for findings in list(groups.values())[:4]:
        findings.sort(key=headline_order)
        first = findings[0]
        t = Text("  • ")
        t.append(safe_text(first.explanation or first.signal, limit=400))
        console.print(t)
        if len(findings) > 1:
            also = ", ".join(f.signal for f in findings[1:6])
            console.print(
                Text("    also growing: ", style="dim").append(safe_text(also, limit=200))
            )
        if first.fix_hint:
            console.print(
                Text("    fix: ", style="bold").append(safe_text(first.fix_hint, limit=300))
            )
    if len(groups) > 4:
        console.print(Text(f"  … {len(groups) - 4} more; see memprobe report", style="dim"))


__all__ = ["RunRequest", "run_command", "default_output", "finish", "make_display", "print_summary"]
