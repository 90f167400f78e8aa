"""Words for verdicts: rates with units, and how much more data a verdict needs."""

from __future__ import annotations

import math
from typing import Callable

from memprobe.analysis.trend import Trend


def standard_error(tr: Trend, z_crit: float) -> float:
    width = tr.ci_high - tr.ci_low
    return width / (2.0 * z_crit * math.sqrt(tr.inflation)) if width > 0 else 0.0


def more_needed(tr: Trend, thr: float, z_crit: float, span: float, word: str) -> str:
    """A slope's standard error shrinks as span^-3/2 under even sampling: how much
    longer until either the leak or the no-leak side is clear at this noise."""
    se = standard_error(tr, z_crit)
    if se <= 0:
        return f"about {span:.0f} more {word}"
    z_now = max(abs(tr.slope) / se, abs(thr - tr.slope) / se, 1e-9)
    factor = (z_crit / z_now) ** (2.0 / 3.0)
    if factor > 10:
        return f"more than {9 * span:.0f} more {word}, or a less noisy signal"
    return f"about {max(1.0, (factor - 1.0) * span):.0f} more {word}"


def needed_text(points: int, span: float, word: str) -> str:
    parts = []
    if points:
        parts.append(f"{points} more samples")
    if span > 0:
        parts.append(f"{math.ceil(span)} more {word}")
    return " and ".join(parts) or "more samples"


def fmt_rate(unit: str, word: str) -> Callable[[float], str]:
    per = "step" if word == "steps" else "s"

    def fmt(v: float) -> str:
        if unit == "bytes":
            return f"{format_bytes(v)}/{per}"
        return f"{v:+.3g}/{per}"

    return fmt


def format_bytes(v: float) -> str:
    """+1.5 MiB style, signed."""
    sign = "-" if v < 0 else "+"
    a = abs(v)
    for name, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if a >= size:
            return f"{sign}{a / size:.3g} {name}"
    return f"{sign}{a:.3g} B"
