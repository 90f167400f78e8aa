"""Launch the target under the bootstrap, forward signals, follow its files, reap it.

The launcher knows nothing of rendering: a ``Display`` is handed in by the CLI.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from typing import IO, Any, Dict, List, Optional, Protocol

from memprobe import __version__
from memprobe.bootstrap.memprobe_agent import wire
from memprobe.collect.state import PARENT_FILE, RunState
from memprobe.launch.gpu import NvmlSampler
from memprobe.launch.limits import OomWatch, ram_limit
from memprobe.launch.procs import TreeSampler
from memprobe.launch.tail import Tailer
from memprobe.record import ExitInfo, Limits, RunRecord

# memprobe/bootstrap/, put first on the target's PYTHONPATH
BOOTSTRAP_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bootstrap"
)
POLL_S = 0.2
OUTSIDE_EVERY_S = 0.5
GPU_EVERY_S = 1.0
FORWARDED_SIGNALS = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


class LaunchError(Exception):
    """The run cannot start; the message says what to do."""


class Display(Protocol):
    """What the launcher needs from the live view (see memprobe.render.live)."""

    captures_output: bool

    def start(self, state: RunState) -> None: ...
    def update(self, state: RunState) -> None: ...
    def output(self, stream: str, data: bytes) -> None: ...
    def stop(self, state: RunState) -> None: ...


@dataclass(frozen=True)
class RunOptions:
    output: str
    sample_interval_s: float = wire.DEFAULT_SAMPLE_INTERVAL_S
    idle_interval_s: float = wire.DEFAULT_IDLE_INTERVAL_S
    overhead_budget: float = wire.DEFAULT_OVERHEAD_BUDGET
    census: bool = True
    tracemalloc: str = "auto"
    fail_collector: Optional[str] = None  # test-only switch, see --x-fail-collector
    extra_config: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunOutcome:
    record: RunRecord
    exit_code: int  # what memprobe exits with: the target's code, or 128+signal
    run_dir: str


def build_command(target: List[str], module: Optional[str], python: str) -> List[str]:
    """The argv to spawn: ``python script args``, ``python -m mod args`` or the raw command."""
    if module is not None:
        return [python, "-m", module, *target]
    if not target:
        raise LaunchError("nothing to run: give a script, -m MODULE, or -- COMMAND")
    return [python, *target]


def check_command(command: List[str], script: Optional[str]) -> None:
    if script is not None:
        if not os.path.exists(script):
            raise LaunchError(f"no such script: {script}")
        if os.path.isdir(script) and not os.path.exists(os.path.join(script, "__main__.py")):
            raise LaunchError(f"{script} is a directory without __main__.py")
    elif shutil.which(command[0]) is None:
        raise LaunchError(f"command not found: {command[0]}")
    if os.path.basename(command[0]).startswith("python"):
        flag = _agentless_python_flag(command[1:])
        if flag is not None:
            raise LaunchError(
                f"python -{flag} {_AGENTLESS_FLAGS[flag]}, so memprobe's agent cannot load; "
                "drop the flag (PYTHONSAFEPATH=1 / -P work)"
            )
        check_interpreter(command[0])


def check_interpreter(python: str) -> None:
    """Refuse an interpreter older than the agent runs on: a clear error now, not a run
    without data. One ``python -E -S -c`` when it is not memprobe's own interpreter; an
    interpreter that cannot say its version is left to the bootstrap (which reports it)."""
    path = shutil.which(python) or python
    if os.path.realpath(path) == os.path.realpath(sys.executable):
        return
    try:
        probe = subprocess.run(
            [path, "-E", "-S", "-c", _VERSION_PROBE],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
        version = tuple(int(x) for x in probe.stdout.strip().split("."))
    except (OSError, ValueError, subprocess.SubprocessError):
        return
    if probe.returncode == 0 and len(version) == 3 and version[:2] < wire.MIN_PYTHON:
        raise LaunchError(
            f"{python} is Python {'.'.join(map(str, version))}; memprobe's agent runs inside "
            f"the profiled process and needs Python {'.'.join(map(str, wire.MIN_PYTHON))} "
            "or newer: give a newer interpreter (--python)"
        )


# what check_interpreter runs: valid Python 2 as well
_VERSION_PROBE = "import sys; sys.stdout.write('%d.%d.%d' % tuple(sys.version_info[:3]))"


# Interpreter flags that keep the bootstrap's sitecustomize from running.
_AGENTLESS_FLAGS = {
    "I": "(isolated mode) ignores PYTHONPATH and skips sitecustomize",
    "E": "ignores PYTHONPATH",
    "S": "skips the site module and with it sitecustomize",
}


def _agentless_python_flag(args: List[str]) -> Optional[str]:
    """The first of -I/-E/-S among python's own options (``-uI``, ``-X dev -S`` too)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--" or arg == "-" or not arg.startswith("-"):
            return None  # the script (or stdin): python's own options end here
        if arg.startswith("--"):
            i += 2 if arg == "--check-hash-based-pycs" else 1
            continue
        for j, ch in enumerate(arg[1:], 1):
            if ch in _AGENTLESS_FLAGS:
                return ch
            if ch in "cm":
                return None  # -c CMD / -m MOD: the rest belongs to the program
            if ch in "WX":  # -W ARG / -X OPT, attached or as the next word
                i += 1 if j == len(arg) - 1 else 0
                break
        i += 1
    return None


def default_python() -> str:
    """The interpreter of the active virtualenv if any, else the one running memprobe."""
    venv = os.environ.get("VIRTUAL_ENV")
    if venv:
        candidate = os.path.join(venv, "bin", "python")
        if os.access(candidate, os.X_OK):
            return candidate
    return sys.executable


def prepare_run_dir(output: str) -> str:
    """Create the run folder beside the record (0700). Fails early if the place is unwritable."""
    out_dir = os.path.dirname(os.path.abspath(output))
    if os.path.isdir(output):
        raise LaunchError(f"output {output} is a directory; give a file name such as run.json")
    if not os.path.isdir(out_dir):
        raise LaunchError(f"cannot write {output}: folder {out_dir} does not exist")
    stem = os.path.abspath(output)
    stem = stem[:-5] if stem.endswith(".json") else stem
    for n in range(1000):
        run_dir = f"{stem}.run" if n == 0 else f"{stem}.run.{n}"
        try:
            os.mkdir(run_dir, 0o700)
            os.chmod(run_dir, 0o700)
            return run_dir
        except FileExistsError:
            continue
        except OSError as e:
            raise LaunchError(f"cannot write beside {output}: {e.strerror}") from None
    raise LaunchError(f"too many run folders named {stem}.run.*; remove old ones")


def make_env(
    run_dir: str, options: RunOptions, base: Optional[Dict[str, str]] = None
) -> Dict[str, str]:
    env = dict(os.environ if base is None else base)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = BOOTSTRAP_DIR + (os.pathsep + old if old else "")
    config = {
        "run_dir": run_dir,
        "wire": wire.WIRE_VERSION,
        "sample_interval_s": options.sample_interval_s,
        "idle_interval_s": options.idle_interval_s,
        "overhead_budget": options.overhead_budget,
        "census": options.census,
        "tracemalloc": options.tracemalloc,
        "fail_collector": options.fail_collector,
        **options.extra_config,
    }
    env[wire.ENV_CONFIG] = json.dumps(config)
    return env


class _Journal:
    """The parent's own lines in the run folder, so the folder alone rebuilds the record."""

    def __init__(self, run_dir: str) -> None:
        fd = os.open(
            os.path.join(run_dir, PARENT_FILE), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600
        )  # like the agents' files: the run's data is the user's alone
        self._f: Optional[IO[str]] = open(fd, "a", encoding="utf-8")  # noqa: SIM115

    def write(self, message: Dict[str, Any]) -> None:
        if self._f is None:
            return
        try:
            self._f.write(wire.safe_encode(message))
            self._f.flush()
        except OSError:
            self._f = None

    def close(self) -> None:
        if self._f is not None:
            self._f.close()


def run(command: List[str], options: RunOptions, run_dir: str, display: Display) -> RunOutcome:
    """Run the command to its end and return the raw record (no analysis yet)."""
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
    journal = _Journal(run_dir)
    journal.write(
        {
            "k": "meta",
            "command": command,
            "cwd": state.cwd,
            "started_at": started_at,
            "memprobe_version": __version__,
            "limits": {"ram_bytes": ram, "ram_source": ram_source, "gpu_bytes": gpu_bytes},
        }
    )
    if gpu.unavailable:
        state.event(0.0, None, "no_gpu", f"no GPU series from the driver: {gpu.unavailable}")
        journal.write(
            {
                "k": wire.K_EVENT,
                "t": 0.0,
                "pid": None,
                "kind": "no_gpu",
                "message": f"no GPU series from the driver: {gpu.unavailable}",
            }
        )
    oom_watch = OomWatch()

    streams: Dict[str, Any] = {}
    masters: Dict[str, int] = {}
    relay_fds: List[int] = []
    pass_fds: List[int] = []
    if display.captures_output:
        masters, streams = _open_ptys()
        # if memprobe dies, the target's agent takes over copying its ptys to the terminal
        # (else its prints fail with EIO): it gets a copy of each master and of our stdout/err
        try:
            relay_fds = [os.dup(sys.stdout.fileno()), os.dup(sys.stderr.fileno())]
        except (OSError, ValueError, AttributeError):  # no real stdout (embedded, tests)
            relay_fds = []
        if relay_fds:
            pairs = [[masters["stdout"], relay_fds[0]], [masters["stderr"], relay_fds[1]]]
            pass_fds = [*masters.values(), *relay_fds]
            relay = {"launcher_pid": os.getpid(), "fds": pairs}
            options = replace(options, extra_config={**options.extra_config, "pty_relay": relay})
    env = make_env(run_dir, options)
    try:
        proc = subprocess.Popen(command, env=env, pass_fds=pass_fds, **streams)
    except OSError as e:
        raise LaunchError(f"cannot start {command[0]}: {e.strerror or e}") from None
    finally:
        for fd in [*streams.values(), *relay_fds]:
            os.close(fd)
    readers = [_start_reader(name, fd, display) for name, fd in masters.items()]

    previous = _install_forwarding(proc)
    tailer = Tailer(run_dir)
    sampler = TreeSampler(proc.pid)
    display.start(state)
    last_outside = last_gpu = 0.0
    try:
        while True:
            code = proc.poll()
            for pid, msg in tailer.poll():
                state.ingest(pid, msg)
            now = time.monotonic()
            if code is None and now - last_outside >= OUTSIDE_EVERY_S:
                last_outside = now
                t = now - t0
                tree = sampler.sample()
                oom_watch.see(proc.pid)
                for pid, ppid, values in tree:
                    argv = sampler.new_argv.get(pid)
                    state.ingest_outside(pid, t, values, ppid, argv)
                    line = {"k": "outside", "pid": pid, "ppid": ppid, "t": t, "v": values}
                    journal.write({**line, "argv": argv} if argv else line)
                if gpu.available and now - last_gpu >= GPU_EVERY_S:
                    last_gpu = now
                    device_values, per_pid = gpu.sample(pid for pid, _, _ in tree)
                    per_pid.setdefault(proc.pid, {}).update(device_values)
                    for pid, values in per_pid.items():
                        state.ingest_outside(pid, t, values)
                        journal.write({"k": "outside", "pid": pid, "t": t, "v": values})
            display.update(state)
            if code is not None:
                break
            time.sleep(POLL_S)
        for r in readers:
            r.join(timeout=2.0)
        time.sleep(0.05)
        for pid, msg in tailer.poll() + tailer.flush_partial():
            state.ingest(pid, msg)
        state.garbage_lines += tailer.garbage_lines
    finally:
        _restore_forwarding(previous)
        gpu.close()
        display.stop(state)
    duration = time.monotonic() - t0
    rc = proc.returncode
    sig = -rc if rc < 0 else None
    oom = oom_watch.rose()
    exit = ExitInfo(code=None if sig else rc, signal=sig, oom_killed=oom)
    journal.write(
        {
            "k": wire.K_EXIT,
            "code": exit.code,
            "signal": sig,
            "oom_killed": oom,
            "duration_s": duration,
        }
    )
    journal.close()
    if sig:
        name = _signal_name(sig)
        state.event(
            duration,
            proc.pid,
            "signal",
            f"target killed by signal {sig} ({name})" + (" — the OOM killer" if oom else ""),
        )
    state.agent_errors(run_dir, duration)
    record = state.build(exit, duration)
    return RunOutcome(record=record, exit_code=128 + sig if sig else rc, run_dir=run_dir)


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "unknown"


def _open_ptys() -> tuple[Dict[str, int], Dict[str, int]]:
    """A pty each for the target's stdout and stderr: it still sees a terminal (colours, line
    buffering), and its output scrolls above the live table."""
    import fcntl
    import pty
    import termios

    masters: Dict[str, int] = {}
    slaves: Dict[str, int] = {}
    for name, real in (("stdout", sys.stdout), ("stderr", sys.stderr)):
        master, slave = pty.openpty()
        try:
            size = fcntl.ioctl(real.fileno(), termios.TIOCGWINSZ, b"\0" * 8)
            fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
        except OSError:
            pass
        masters[name], slaves[name] = master, slave
    return masters, slaves


def _start_reader(name: str, fd: int, display: Display) -> threading.Thread:
    def pump() -> None:
        try:
            while True:
                try:
                    data = os.read(fd, 65536)
                except OSError:  # EIO: every writer closed the pty
                    break
                if not data:
                    break
                display.output(name, data)
        finally:
            os.close(fd)

    thread = threading.Thread(target=pump, name=f"memprobe-{name}", daemon=True)
    thread.start()
    return thread


def _install_forwarding(proc: subprocess.Popen[bytes]) -> Dict[int, Any]:
    """Forward termination signals to the target. SIGINT is not forwarded: Ctrl-C reaches the
    target directly (same process group), and a second copy would interrupt its cleanup."""
    previous: Dict[int, Any] = {}

    def forward(signum: int, _frame: Any) -> None:
        try:
            proc.send_signal(signum)
        except OSError:
            pass

    for name in FORWARDED_SIGNALS:
        sig = getattr(signal, name, None)
        if sig is not None:
            previous[sig] = signal.signal(sig, forward)
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    return previous


def _restore_forwarding(previous: Dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
