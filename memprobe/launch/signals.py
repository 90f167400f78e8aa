"""Signals while the target runs: termination signals forwarded to it, Ctrl-C left to it."""

from __future__ import annotations

import signal
import subprocess
from typing import Any, Dict

FORWARDED_SIGNALS = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def install_forwarding(proc: subprocess.Popen[bytes]) -> Dict[int, Any]:
    """Forward termination signals to the target. SIGINT is not forwarded: Ctrl-C reaches the
    target directly (same process group), and a second copy would interrupt its cleanup.
    Returns the previous handlers, for ``restore_forwarding``."""
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


def restore_forwarding(previous: Dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "unknown"
