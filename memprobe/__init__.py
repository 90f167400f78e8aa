"""memprobe: a memory-leak profiler for Python and PyTorch training scripts.

This module stays tiny: a profiled target may import it to mark steps.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memprobe.inprocess import Run

__all__ = ["__version__", "step", "track", "load_ipython_extension"]
__version__ = "0.1.0"


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
