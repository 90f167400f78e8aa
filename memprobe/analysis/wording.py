"""Words for verdicts: rates with units, and how much more data a verdict needs."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:
    from memprobe.analysis.trend import Trend


def unit_of(signal: str) -> str:
    """A name ending in ``bytes`` is bytes; anything else is a count. (Here, not in
    ``series``, so that the live table's text can ask before numpy is loaded.)"""
    return "bytes" if signal.endswith("bytes") else "count"


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


def more_to_clear(
    z_trend: float, z_crit: float, ratio: float, least: float, span: float, word: str
) -> str:
    """A slope whose interval is already clear of zero, held back by its trend test
    (``z_trend`` under ``z_crit``: z grows like the square root of the points) or by its
    rise over the noise band (``ratio`` under ``least``: under stationary noise the ratio
    grows like span^1.5): the span both need, at this pace. A random walk's ratio does not
    grow: past ten times the span, more of the same will not tell."""
    factor = 1.0
    if z_trend < z_crit:
        factor = (z_crit / max(z_trend, 1e-9)) ** 2
    if ratio < least:
        factor = max(factor, (least / max(ratio, 1e-9)) ** (2.0 / 3.0))
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
            return f"{fmt_bytes(v, signed=True)}/{per}"
        return f"{fmt_count(v, signed=True)}/{per}"

    return fmt


def fmt_count(v: Optional[float], signed: bool = False) -> str:
    """A count for a person, to three significant digits and never in exponent form:
    '0.25', '43.5', '1,230' (not '1.23e+03'); ``signed``: '+' before a positive one."""
    if not _finite(v):
        return "–"
    assert v is not None
    text = f"{v:+.3g}" if signed else f"{v:.3g}"
    if "e" in text:
        text = f"{float(text):+,.0f}" if signed else f"{float(text):,.0f}"
    return text


def _finite(x: Optional[float]) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def fmt_bytes(n: Optional[float], signed: bool = False) -> str:
    """Bytes for a person, the one byte formatter of memprobe: '1.5 KiB', '+25.3 MiB'
    (``signed``: '+', '-' or '±'), '–' for a missing or non-finite number."""
    if not _finite(n):
        return "–"
    assert n is not None
    sign = ("+" if n > 0 else "-" if n < 0 else "±") if signed else ("-" if n < 0 else "")
    a = abs(float(n))
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if a < 1024 or unit == "TiB":
            if unit == "B":
                return f"{sign}{a:.0f} B" if a >= 10 or a == int(a) else f"{sign}{a:.2f} B"
            return f"{sign}{a:.1f} {unit}"
        a /= 1024
    raise AssertionError("unreachable")
