"""Shared helpers for showing target-provided strings and numbers safely.

Everything a target names (type names, holder paths, argv, file paths) is
untrusted: it may carry Rich markup, Markdown, HTML or terminal escape
sequences. ``clean`` turns it into plain printable text; the renderers then put
it into ``rich.text.Text`` objects (never into markup strings), escape it for
Markdown with ``md``/``md_code``, or hand it to the browser as JSON text.
"""

from __future__ import annotations

import math
import re
from typing import Optional, Sequence

from memprobe.analysis.wording import fmt_bytes, unit_of

__all__ = [
    "clean",
    "md",
    "md_code",
    "unit_of",
    "fmt_bytes",
    "fmt_count",
    "fmt_value",
    "fmt_rate",
    "fmt_duration",
    "fmt_pct",
    "sparkline",
]

# CSI / OSC / other ESC sequences, then any remaining C0/C1 control character,
# DEL, and the bidi overrides that let text display differently from what it is
# ("Trojan Source", CVE-2021-42574).
_ESCAPE_SEQ = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC ... BEL or ST
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS / SOS / PM / APC ... ST
    r"|\x1b[@-Z\\-_]?"  # two-byte escapes, or a lone ESC
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f]")

MAX_TEXT = 400


def clean(value: object, max_len: Optional[int] = MAX_TEXT, *, single_line: bool = True) -> str:
    """Plain printable text from any target-provided value.

    Escape sequences are removed, other control characters replaced by U+FFFD
    (so that something visibly was there), newlines and tabs become spaces when
    ``single_line`` (a newline in a name from the target must not forge a line of
    memprobe's own, "memprobe: verdict NO LEAK"), and the result is cut to ``max_len``
    characters (``None``: not cut). The one sanitiser for everything a target names:
    the run summary, the CLI's error line, the live table, every report format.
    """
    s = value if isinstance(value, str) else str(value)
    s = _ESCAPE_SEQ.sub("", s)
    if single_line:
        s = s.replace("\r\n", " ").replace("\n", " ").replace("\t", " ")
    else:
        s = s.replace("\r\n", "\n").replace("\t", "    ")
    s = _CONTROL.sub("\ufffd", s)
    if max_len is not None and len(s) > max_len:
        s = s[: max_len - 1] + "…"
    return s


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")


def md(value: object, max_len: int = MAX_TEXT) -> str:
    """Text safe to put into Markdown prose or a table cell.

    Markdown specials are backslash-escaped and ``<``/``&`` become entities, so
    that neither a Markdown nor an embedded-HTML renderer (GitHub) interprets
    anything.
    """
    s = clean(value, max_len)
    s = s.replace("&", "&amp;").replace("<", "&lt;")
    return _MD_SPECIAL.sub(r"\\\1", s)


def md_code(value: object, max_len: int = MAX_TEXT) -> str:
    """An inline code span holding ``value`` literally (safe in table cells too)."""
    s = clean(value, max_len).replace("|", "¦")  # a pipe ends a table cell even in code
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _finite(x: Optional[float]) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def fmt_count(n: Optional[float], signed: bool = False) -> str:
    if not _finite(n):
        return "–"
    assert n is not None
    sign = ("+" if n > 0 else "-" if n < 0 else "±") if signed else ("-" if n < 0 else "")
    a = abs(float(n))
    if a >= 1e9:
        return f"{sign}{a / 1e9:.1f}G"
    if a >= 1e6:
        return f"{sign}{a / 1e6:.1f}M"
    if a >= 1e4:
        return f"{sign}{a / 1e3:.1f}k"
    if a == int(a) or a >= 100:
        return f"{sign}{a:,.0f}"
    return f"{sign}{a:.3g}" if a < 10 else f"{sign}{a:.1f}"


def fmt_value(n: Optional[float], unit: str, signed: bool = False) -> str:
    return fmt_bytes(n, signed) if unit == "bytes" else fmt_count(n, signed)


def fmt_rate(per_step: Optional[float], per_s: Optional[float], unit: str) -> str:
    """'+25.3 MiB/step' when there is a per-step rate, else '+1.2 MiB/min'."""
    if _finite(per_step):
        return f"{fmt_value(per_step, unit, signed=True)}/step"
    if _finite(per_s):
        assert per_s is not None
        return f"{fmt_value(per_s * 60.0, unit, signed=True)}/min"
    return "–"


def fmt_duration(seconds: Optional[float]) -> str:
    if not _finite(seconds):
        return "–"
    assert seconds is not None
    s = max(0.0, float(seconds))
    if s < 60:
        return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    if s < 86400 * 2:
        return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"
    return f"{s / 86400:.1f} days"


def fmt_pct(x: Optional[float]) -> str:
    if not _finite(x):
        return "–"
    assert x is not None
    if 0.995 <= x < 1.0:
        return ">99%"  # never round a p-value-based confidence up to certainty
    return f"{100.0 * x:.0f}%"


_BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float], width: int = 20) -> str:
    """A unicode sparkline of ``values`` squeezed (by bucket maximum) into ``width`` cells."""
    vals = [float(v) for v in values if _finite(v)]
    if not vals or width <= 0:
        return ""
    if len(vals) > width:
        buckets = []
        for i in range(width):
            lo = i * len(vals) // width
            hi = max(lo + 1, (i + 1) * len(vals) // width)
            buckets.append(max(vals[lo:hi]))
        vals = buckets
    lo_v, hi_v = min(vals), max(vals)
    if not math.isfinite(hi_v - lo_v):  # values near ±1.8e308: their range overflows
        scale = max(abs(lo_v), abs(hi_v))
        vals = [v / scale for v in vals]
        lo_v, hi_v = lo_v / scale, hi_v / scale
    if hi_v - lo_v <= 0:
        return _BARS[0] * len(vals)
    top = len(_BARS) - 1
    return "".join(_BARS[int(round((v - lo_v) / (hi_v - lo_v) * top))] for v in vals)
