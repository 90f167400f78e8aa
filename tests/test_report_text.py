"""Safe-text helpers: cleaning target strings, Markdown escaping, number formats, sparklines."""

from __future__ import annotations

import io
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from memprobe.render._text import (
    clean,
    fmt_bytes,
    fmt_count,
    fmt_duration,
    fmt_rate,
    md,
    md_code,
    sparkline,
    unit_of,
)

CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_clean_removes_escape_sequences() -> None:
    assert clean("a\x1b[31mred\x1b[0m") == "ared"
    assert clean("t\x1b]0;title\x07x") == "tx"
    assert clean("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "alink"
    assert clean("bell\x07") == "bell\ufffd"
    assert clean("two\nlines\ttab") == "two lines tab"
    assert clean("x" * 500, max_len=10) == "x" * 9 + "…"
    assert clean("rtl\u202eoverride") == "rtl\ufffdoverride"
    assert clean(None) == "None"


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_clean_output_has_no_control_characters(s: str) -> None:
    out = clean(s)
    assert not CONTROL.search(out) and "\x1b" not in out and "\t" not in out
    assert len(out) <= 400


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_clean_text_prints_as_itself_in_rich(s: str) -> None:
    # GIVEN any string, cleaned and put in a Text (never markup)
    buf = io.StringIO()
    Console(file=buf, width=1000, force_terminal=False, soft_wrap=True).print(Text(clean(s)))
    # THEN what reaches the terminal is exactly that text, markup included
    assert buf.getvalue().rstrip("\n").rstrip() == clean(s).rstrip()


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_md_has_no_active_markdown_or_html(s: str) -> None:
    out = md(s)
    assert "<" not in out
    # every Markdown special is preceded by a backslash
    stripped = out.replace("\\\\", "")
    assert not re.search(r"(?<!\\)[`*_\[\]|#<>]", stripped)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_md_code_is_one_code_span(s: str) -> None:
    out = md_code(s)
    fence = re.match(r"`+", out)
    assert fence is not None
    inner = out[len(fence.group(0)) : len(out) - len(fence.group(0))]
    assert out.endswith(fence.group(0)) and fence.group(0) not in inner
    assert "|" not in out and "\n" not in out


def test_md_examples() -> None:
    assert md("a_b*c") == "a\\_b\\*c"
    assert md("<script>") == "&lt;script\\>"
    assert md_code("x`y") == "``x`y``"
    assert md_code("`a") == "`` `a ``"


def test_units_and_formats() -> None:
    assert unit_of("rss_bytes") == "bytes" and unit_of("tensors") == "count"
    assert fmt_bytes(0) == "0 B" and fmt_bytes(1536) == "1.5 KiB"
    assert fmt_bytes(25.3 * 2**20, signed=True) == "+25.3 MiB"
    assert fmt_bytes(-2 * 2**30, signed=True) == "-2.0 GiB"
    assert fmt_bytes(float("nan")) == "–" and fmt_bytes(None) == "–"
    assert fmt_count(1) == "1" and fmt_count(1234) == "1,234" and fmt_count(12345) == "12.3k"
    assert fmt_count(0.5, signed=True) == "+0.5"
    assert fmt_rate(1.0, 20.0, "count") == "+1/step"
    assert fmt_rate(None, 1024.0, "bytes") == "+60.0 KiB/min"
    assert fmt_rate(None, None, "bytes") == "–"
    assert fmt_duration(5) == "5.0 s" and fmt_duration(2460) == "41 min 00 s"
    assert fmt_duration(7200) == "2 h 00 min"


def test_sparkline() -> None:
    assert sparkline([]) == ""
    assert sparkline([1, 1, 1]) == "▁▁▁"
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == "▁▂▃▄▅▆▇█"
    assert len(sparkline(list(range(1000)), 20)) == 20
    assert sparkline([1.0, float("nan"), 2.0]) == "▁█"


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_every_place_a_target_string_is_shown_uses_the_one_sanitiser(s: str) -> None:
    # GIVEN any string from the target, shown by the run summary and the live table
    # (safe_text) and by the CLI's error line (_fail)
    import contextlib

    from memprobe import cli
    from memprobe.render.fmt import safe_text

    shown = safe_text(s).plain
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        cli._fail(s)
    # THEN each is what the one sanitiser makes of it: no controls, no escapes, one line
    assert shown == clean(s, None)
    assert err.getvalue() == f"memprobe: error: {clean(s, 2000)}\n"
    for out in (shown, err.getvalue().rstrip("\n")):
        assert not CONTROL.search(out) and "\x1b" not in out


def test_sparkline_of_values_whose_range_overflows() -> None:
    from memprobe.render._text import sparkline

    # GIVEN values near the largest floats, whose difference is not a finite number
    line = sparkline([-1.7e308, 0.0, 1.7e308])
    # THEN it still draws them, lowest to highest
    assert line == "▁▅█"
