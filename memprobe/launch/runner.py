"""Run the target to its end: spawn it under the bootstrap, follow its files and its process
tree while it lives, reap it and decode its exit. Each step is a function below ``run``.

The launcher knows nothing of rendering: a ``Display`` is handed in by the command.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable, List, Optional, Protocol

from memprobe import __version__
from memprobe.bootstrap.memprobe_agent import wire
from memprobe.collect.assemble import build_record
from memprobe.collect.journal import K_META, Journal
from memprobe.collect.state import RunState
from memprobe.launch.command import LaunchError
from memprobe.launch.gpu import NvmlSampler
from memprobe.launch.limits import OomWatch, ram_limit, shield_from_oom
from memprobe.launch.outside import OutsideSampler
from memprobe.launch.rundir import RunOptions, make_env
from memprobe.launch.signals import install_forwarding, restore_forwarding, signal_name
from memprobe.launch.tail import Tailer
from memprobe.launch.terminal import Terminal, open_terminal
from memprobe.record import ExitInfo, Limits, RunRecord

POLL_S = 0.2


class Display(Protocol):
    """What the launcher needs from the live view (see memprobe.render.live)."""

    captures_output: bool

    def start(self, state: RunState) -> None: ...
    def update(self, state: RunState) -> None: ...
    def output(self, stream: str, data: bytes) -> None: ...
    def stop(self, state: RunState) -> None: ...


@dataclass(frozen=True)
class RunOutcome:
    record: RunRecord
    exit_code: int  # what memprobe exits with: the target's code, or 128+signal
    run_dir: str


@dataclass
class _Run:
    """What the parent holds while the target lives."""

    state: RunState
    journal: Journal
    gpu: NvmlSampler
    t0: float  # monotonic clock at the run's start


def run(
    command: List[str],
    options: RunOptions,
    run_dir: str,
    display: Display,
    on_start: Optional[Callable[[], None]] = None,
) -> RunOutcome:
    """Run the command to its end and return the raw record (no analysis yet).
    ``on_start`` is called once the target runs: work of the command's own that need not
    hold the target's start back."""
    r = _open_run(command, run_dir)
    oom_watch = OomWatch()
    terminal = open_terminal(display.captures_output)
    proc = _spawn(command, _with_relay(options, terminal), run_dir, terminal)
    shield_from_oom()
    if on_start is not None and r.state.limits.ram_source != "cgroup":
        # Under a memory cgroup the parent takes no memory of its own while the target runs
        # (on_start imports the statistics: ~80 MiB). When the target fills the cgroup, the
        # kernel kills it first, but memory the parent asks for before the killed target's
        # pages are freed sets off a second OOM kill, and the parent is all that is left to
        # kill (seen in a 400 MiB cgroup: the target, 346 MiB, then memprobe, 61 MiB). The
        # statistics are then imported after the target has ended.
        on_start()
    readers = terminal.start_readers(display)
    previous = install_forwarding(proc)
    tailer = Tailer(run_dir)
    outside = OutsideSampler(proc.pid, r.gpu, oom_watch)
    display.start(r.state)
    try:
        _follow(proc, r, tailer, outside, display)
        _drain(readers, tailer, r.state)
    finally:
        restore_forwarding(previous)
        r.gpu.close()
        display.stop(r.state)
    duration = time.monotonic() - r.t0
    exit = _reap(proc, oom_watch, r, duration)
    r.state.agent_errors(run_dir, duration)
    record = build_record(r.state, exit, duration)
    return RunOutcome(record=record, exit_code=_exit_code(exit), run_dir=run_dir)


def _open_run(command: List[str], run_dir: str) -> _Run:
    """The run state and the journal, opened with the run's meta line; the limits known."""
    started_at = time.time()
    t0 = time.monotonic()
    ram, ram_source = ram_limit()
    gpu = NvmlSampler()
    gpu_bytes = [d.total_bytes for d in gpu.devices]
    state = RunState(
        command=command,
        cwd=os.getcwd(),
        started_at=started_at,
        limits=Limits(ram_bytes=ram, ram_source=ram_source, gpu_bytes=gpu_bytes),
    )
    journal = Journal(run_dir)
    journal.write(
        {
            "k": K_META,
            "command": command,
            "cwd": state.cwd,
            "started_at": started_at,
            "memprobe_version": __version__,
            "limits": {"ram_bytes": ram, "ram_source": ram_source, "gpu_bytes": gpu_bytes},
        }
    )
    if gpu.unavailable:
        message = f"no GPU series from the driver: {gpu.unavailable}"
        state.event(0.0, None, "no_gpu", message)
        journal.write(
            {"k": wire.K_EVENT, "t": 0.0, "pid": None, "kind": "no_gpu", "message": message}
        )
    return _Run(state=state, journal=journal, gpu=gpu, t0=t0)


def _with_relay(options: RunOptions, terminal: Terminal) -> RunOptions:
    relay = terminal.relay_config()
    if relay is None:
        return options
    return replace(options, extra_config={**options.extra_config, "pty_relay": relay})


def _spawn(
    command: List[str], options: RunOptions, run_dir: str, terminal: Terminal
) -> subprocess.Popen[bytes]:
    env = make_env(run_dir, options)
    try:
        return subprocess.Popen(
            command,
            env=env,
            pass_fds=terminal.pass_fds(),
            stdout=terminal.slaves.get("stdout"),
            stderr=terminal.slaves.get("stderr"),
        )
    except OSError as e:
        raise LaunchError(f"cannot start {command[0]}: {e.strerror or e}") from None
    finally:
        terminal.close_child_ends()


def _follow(
    proc: subprocess.Popen[bytes],
    r: _Run,
    tailer: Tailer,
    outside: OutsideSampler,
    display: Display,
) -> None:
    """Until the target exits: its agents' new lines, the outside samples that are due, the
    live view; one round every ``POLL_S``."""
    while True:
        code = proc.poll()
        for pid, msg in tailer.poll():
            r.state.ingest(pid, msg)
        now = time.monotonic()
        if code is None:
            outside.poll(now, now - r.t0, r.state, r.journal)
        display.update(r.state)
        if code is not None:
            return
        try:  # a sleep that ends as soon as the target does (Popen polls every <= 50 ms)
            proc.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            pass


def _drain(readers: List[threading.Thread], tailer: Tailer, state: RunState) -> None:
    """After the exit: the output still in the ptys, the last lines of every file."""
    for reader in readers:
        reader.join(timeout=2.0)
    time.sleep(0.05)
    for pid, msg in tailer.poll() + tailer.flush_partial():
        state.ingest(pid, msg)
    state.garbage_lines += tailer.garbage_lines


def _reap(proc: subprocess.Popen[bytes], oom_watch: OomWatch, r: _Run, duration: float) -> ExitInfo:
    """The target's exit (code, or signal and whether the OOM killer sent it), journalled."""
    rc = proc.returncode
    sig = -rc if rc < 0 else None
    oom = oom_watch.rose()
    exit = ExitInfo(code=None if sig else rc, signal=sig, oom_killed=oom)
    r.journal.write(
        {
            "k": wire.K_EXIT,
            "code": exit.code,
            "signal": sig,
            "oom_killed": oom,
            "duration_s": duration,
        }
    )
    r.journal.close()
    if sig:
        r.state.event(
            duration,
            proc.pid,
            "signal",
            f"target killed by signal {sig} ({signal_name(sig)})"
            + (" — the OOM killer" if oom else ""),
        )
    return exit


def _exit_code(exit: ExitInfo) -> int:
    """What memprobe exits with: the target's code, or 128+N when signal N killed it."""
    return 128 + exit.signal if exit.signal else (exit.code or 0)
