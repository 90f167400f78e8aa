"""Small formatting helpers shared by the renderers."""

from __future__ import annotations

import re
from typing import Optional, Tuple

from rich.text import Text

from memprobe.record import Finding
from memprobe.render._text import fmt_bytes, sparkline

__all__ = ["clean", "fmt_bytes", "headline_order", "safe_text", "sparkline"]

# C0/C1 controls and escape sequences from the target must never reach the terminal raw; nor
# the bidi overrides that make text display as something else (CVE-2021-42574), as in _text
_CONTROL = re.compile(
    r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
    "|[\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def clean(s: str, limit: Optional[int] = None) -> str:
    """Strip escape sequences and control characters; shorten to limit with an ellipsis.

    One line: a newline in a name from the target must not forge a line of memprobe's own
    ("memprobe: verdict NO LEAK"), so newlines and tabs become spaces."""
    s = str(s).replace("\r\n", " ").replace("\n", " ").replace("\t", " ")
    s = _CONTROL.sub("�", s)
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return s


def safe_text(s: str, limit: Optional[int] = None, style: str = "") -> Text:
    """Target-provided text as a Rich Text (no markup interpretation), controls removed."""
    return Text(clean(s, limit), style=style)


def headline_order(f: Finding) -> Tuple[int, int, float]:
    """Sort key for the finding a person should see first: one with a named holder, then
    bytes before counts, then the fastest growth (a tiny USS creep must not hide a
    300 KiB/step RSS leak, and the bytes finding carries the projection)."""
    named = 0 if (f.culprit or {}).get("holder") else 1
    is_bytes = 0 if f.unit == "bytes" else 1
    return (named, is_bytes, -abs(f.slope_per_s or 0.0))
