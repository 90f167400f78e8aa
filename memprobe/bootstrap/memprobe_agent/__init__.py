"""The in-target agent: standard library only, never imports torch.

Imported by memprobe's ``sitecustomize`` bootstrap when ``MEMPROBE_CONFIG`` is
set. ``start()`` is idempotent; ``step()`` marks a training step.
"""

from __future__ import annotations

from .core import start, step

__all__ = ["start", "step"]
