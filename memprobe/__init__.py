"""memprobe: a memory-leak profiler for Python and PyTorch training scripts.

This module stays tiny: a profiled target may import it to mark steps, watch
objects and put marks on the run's timeline. Each call is a no-op when the
process is not running under ``memprobe run``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from memprobe.inprocess import Run

__all__ = ["__version__", "load_ipython_extension", "mark", "step", "track", "watch"]
__version__ = "0.1.0"

T = TypeVar("T")


def step() -> None:
    """Mark one training step for loops without ``optimizer.step()``.

    A no-op when the process is not running under ``memprobe run`` or ``memprobe.track()``.
    """
    agent = sys.modules.get("memprobe_agent")
    if agent is not None:
        agent.step()


def track(**options: Any) -> Run:
    """Sample this process inside ``with memprobe.track() as run:`` (see memprobe.inprocess)."""
    from memprobe.inprocess import track as _track

    return _track(**options)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext memprobe``: the ``%%memprobe`` cell magic (see memprobe.ipython)."""
    from memprobe.ipython import load_ipython_extension as _load

    _load(ipython)


def watch(name: str, obj: T) -> T:
    """Follow ``obj`` under ``name``: its deep size and its ``len()`` become series of the
    run (``watch:NAME:bytes``, ``watch:NAME:len``), judged like every other signal.

    Returns ``obj``, so ``buffer = memprobe.watch("buffer", [])`` works. Holds ``obj`` by a
    weak reference where its type allows one, else lets go of it as soon as the program
    has; watching under a name again follows the new object. A no-op when the process is
    not running under ``memprobe run``.
    """
    agent = sys.modules.get("memprobe_agent")
    if agent is not None:
        agent.watch(name, obj)
    return obj


def mark(label: str) -> None:
    """Put an event on the run's timeline ("epoch 3", "eval start") at the current step.

    Shown in the live table, the report and as a vertical line on the HTML charts. A no-op
    when the process is not running under ``memprobe run``.
    """
    agent = sys.modules.get("memprobe_agent")
    if agent is not None:
        agent.mark(label)
