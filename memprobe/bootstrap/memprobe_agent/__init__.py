"""The in-target agent: standard library only, never imports torch.

Imported by memprobe's ``sitecustomize`` bootstrap when ``MEMPROBE_CONFIG`` is
set. ``start()`` is idempotent; ``step()`` marks a training step, ``watch(name, obj)``
follows an object's size, ``mark(label)`` puts an event on the run's timeline.

Importing the package runs nothing: these load the agent's core on first use
(PEP 562), so the parent can import ``memprobe_agent.wire`` (the one module both
sides share) without loading the collectors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core import mark, start, step, watch

__all__ = ["mark", "start", "step", "watch"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import core

    value = getattr(core, name)
    globals()[name] = value  # once loaded, a plain attribute: memprobe.step() stays cheap
    return value
