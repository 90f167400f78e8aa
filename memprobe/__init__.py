"""memprobe: a memory-leak profiler for Python and PyTorch training scripts.

This module stays tiny: a profiled target may import it to mark steps.
"""

from __future__ import annotations

import sys

__all__ = ["__version__", "step"]
__version__ = "0.1.0"


def step() -> None:
    """Mark one training step for loops without ``optimizer.step()``.

    A no-op when the process is not running under ``memprobe run``.
    """
    agent = sys.modules.get("memprobe_agent")
    if agent is not None:
        agent.step()
