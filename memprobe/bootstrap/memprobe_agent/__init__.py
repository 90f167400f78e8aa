"""The in-target agent: standard library only, never imports torch.

Imported by memprobe's ``sitecustomize`` bootstrap when ``MEMPROBE_CONFIG`` is
set. ``start()`` is idempotent; ``step()`` marks a training step, ``watch(name, obj)``
follows an object's size, ``mark(label)`` puts an event on the run's timeline.
"""

from __future__ import annotations

from .core import mark, start, step, watch

__all__ = ["mark", "start", "step", "watch"]
