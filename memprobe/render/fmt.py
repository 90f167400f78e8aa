"""Small formatting helpers shared by the renderers."""

from __future__ import annotations

from typing import Optional, Tuple

from rich.text import Text

from memprobe.record import Finding
from memprobe.render._text import clean, fmt_bytes, sparkline

__all__ = ["clean", "fmt_bytes", "headline_order", "safe_text", "sparkline"]


def safe_text(s: str, limit: Optional[int] = None, style: str = "") -> Text:
    """Target-provided text as a Rich Text (no markup interpretation), cleaned by the one
    sanitiser (``_text.clean``: escapes and controls gone, one line, at most ``limit``)."""
    return Text(clean(s, limit), style=style)


def headline_order(f: Finding) -> Tuple[int, int, float]:
    """Sort key for the finding a person should see first: one with a named holder, then
    bytes before counts, then the fastest growth (a tiny USS creep must not hide a
    300 KiB/step RSS leak, and the bytes finding carries the projection)."""
    named = 0 if f.holder else 1
    is_bytes = 0 if f.unit == "bytes" else 1
    return (named, is_bytes, -abs(f.slope_per_s or 0.0))
