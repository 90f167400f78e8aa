"""The in-target agent: standard library only, never imports torch.

Imported by memprobe's ``sitecustomize`` bootstrap when ``MEMPROBE_CONFIG`` is
set. ``start()`` is idempotent; ``step()`` marks a training step.

Importing the package runs nothing: ``start`` and ``step`` load the agent's core
on first use (PEP 562), so the parent can import ``memprobe_agent.wire`` (the
one module both sides share) without loading the collectors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core import start, step

__all__ = ["start", "step"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import core

    value = getattr(core, name)
    globals()[name] = value  # once loaded, a plain attribute: memprobe.step() stays cheap
    return value
