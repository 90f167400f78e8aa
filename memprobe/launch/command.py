"""What to run: the argv to spawn, checked before anything starts (the script exists, the
interpreter is new enough for the agent and has no flag that keeps the bootstrap out)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import List, Optional

from memprobe.bootstrap.memprobe_agent import wire


class LaunchError(Exception):
    """The run cannot start; the message says what to do."""


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
