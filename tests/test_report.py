"""The report renderers: terminal (80 columns), Markdown, JSON and HTML, on synthetic records."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from typing import cast

import recordgen as g
from rich.console import Console

from memprobe.record import Event, Evidence, RunRecord
from memprobe.render.html import json_for_script, report_html
from memprobe.render.report import FINDINGS_SCHEMA, render_report, report_json, report_markdown

ANSI_SGR = re.compile(r"\x1b\[[0-9;]*m")  # Rich's own styling


def _terminal(record: RunRecord, width: int = 80) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=True, color_system="standard")
    render_report(record, console)
    return buf.getvalue()


def _plain(record: RunRecord, width: int = 80) -> str:
    return ANSI_SGR.sub("", _terminal(record, width))


def test_terminal_report_shows_verdict_findings_and_processes() -> None:
    # GIVEN the loss-list pattern
    record = g.leaky()
    # WHEN it is rendered at 80 columns
    out = _plain(record)
    # THEN verdict, finding, holder, type, line, projection, fix hint and warm-up are there
    assert "LEAK" in out and "confidence 99%" in out
    assert "__main__.trainer.actor_losses" in out
    assert "torch.Tensor (holds autograd graphs)" in out
    assert "train.py:42" in out
    assert "reaches 8.0 GiB at ≈ step" in out
    assert "append loss.item()" in out
    assert "+256.0 KiB/step" in out and "+1/step" in out
    assert "warm-up (dim in trend) until step 10" in out
    assert "▁" in out and "█" in out  # sparklines
    assert all(len(line) <= 80 for line in out.splitlines())


def test_terminal_report_no_leak() -> None:
    out = _plain(g.fixed())
    assert "NO LEAK" in out and "No findings." in out
    assert "no leak 90%" in out


def test_terminal_report_hostile_strings_are_text() -> None:
    # GIVEN names carrying Rich markup, escape sequences and control characters
    record = dataclasses.replace(
        g.leaky(hostile=True),
        events=[Event(t=1.0, pid=1000, kind="collector_off\x1b[2J", message="boom\x1b]0;x\x07")],
    )
    raw = _terminal(record)
    # THEN no escape sequence other than Rich's own colours reaches the terminal ...
    assert "\x07" not in raw and "\x1b]" not in raw and "\x1b[2J" not in raw
    assert "\x1b[31mred" not in raw
    assert not re.search(r"\x1b(?!\[[0-9;]*m)", raw)
    # ... and markup shows literally
    out = ANSI_SGR.sub("", raw)
    assert "[bold red]pwned[/]" in out
    assert "<script>alert(1)</script>" in out
    assert all(len(line) <= 80 for line in out.splitlines())


def test_terminal_report_multi_process_and_no_analysis() -> None:
    # GIVEN two ranks and no analysis summaries in the record
    record = g.leaky(roles=(("rank", 0, None), ("rank", 1, None)), with_summaries=False)
    out = _plain(record, width=100)
    assert "rank 0 (pid 1000)" in out and "rank 1 (pid 1001)" in out
    assert "not analysed" in out or "LEAK" in out  # analysis may fill it in once it lands


def test_markdown_report_escapes_target_strings() -> None:
    md = report_markdown(g.leaky(hostile=True))
    assert md.startswith("## memprobe report")
    assert "append loss\\.item\\(\\)" in md
    # outside code spans, nothing HTML-like or markup-like survives unescaped
    prose = re.sub(r"(`+).*?\1", "", md)
    assert "<" not in prose and "\x1b" not in md and "\x07" not in md
    # a table row keeps its 6 cells even with pipes in names
    rows = [line for line in md.splitlines() if line.startswith("| `")]
    assert rows and all(re.sub(r"(`+).*?\1", "", r).count("|") == 7 for r in rows)


def test_json_report_is_findings_only_with_stable_keys() -> None:
    record = g.leaky(hostile=True)
    doc = json.loads(report_json(record))
    assert doc["schema"] == FINDINGS_SCHEMA
    assert doc["verdict"] == "leak"
    assert len(doc["findings"]) == len(record.findings) == 2
    f = doc["findings"][0]
    assert sorted(f) == [
        "confidence",
        "culprit",
        "evidence",
        "explanation",
        "fix_hint",
        "kind",
        "pid",
        "process",
        "projected_oom",
        "signal",
        "slope_per_s",
        "slope_per_step",
        "unit",
        "verdict",
    ]
    assert sorted(f["culprit"]) == ["holder", "holds_autograd_graph", "location", "type"]
    assert f["culprit"]["type"] == g.HOSTILE_TYPE  # data stays data in JSON
    assert report_json(record) == report_json(record)
    assert "\x1b" not in report_json(record)  # escaped as \u001b


def test_json_report_survives_non_finite_numbers() -> None:
    record = g.leaky()
    bad = dataclasses.replace(
        record.findings[0],
        slope_per_step=float("nan"),
        evidence=cast(Evidence, {"x": float("inf")}),
    )
    doc = json.loads(report_json(dataclasses.replace(record, findings=[bad])))
    assert doc["findings"][0]["slope_per_step"] is None
    assert doc["findings"][0]["evidence"] == {"x": None}


def test_html_report_embeds_data_safely() -> None:
    page = report_html(g.leaky(hostile=True))
    # exactly our three script elements: data, uPlot, page script
    assert page.lower().count("<script") == 3 and page.lower().count("</script") == 3
    assert "alert(1)" in page and "<script>alert(1)" not in page
    assert "<img src=x" not in page and "<b>x</b>" not in page
    data = re.search(
        r'<script type="application/json" id="memprobe-data">(.*?)</script>', page, re.S
    )
    assert data is not None
    payload = json.loads(data.group(1))
    assert payload["kind"] == "report"
    assert any(g.HOSTILE_TYPE in v for f in payload["findings"] for _, v in f["rows"])
    assert len(payload["processes"][0]["charts"]) == 3
    chart = payload["processes"][0]["charts"][0]
    assert chart["fit"] and chart["limit"] and chart["warmup_end_x"] == 10.0
    assert "http://" not in page.split("<script")[0].replace("http://x", "")  # no remote loads
    assert "Content-Security-Policy" in page


def test_json_for_script_cannot_close_the_element() -> None:
    s = json_for_script({"a": "</script><!-- \u2028 & >"})
    assert "<" not in s and ">" not in s and "&" not in s and "\u2028" not in s
    assert json.loads(s) == {"a": "</script><!-- \u2028 & >"}


def test_html_report_decimates_long_series() -> None:
    record = g.leaky(steps=12_000)
    page = report_html(record)
    match = re.search(r'id="memprobe-data">(.*?)</script>', page, re.S)
    assert match is not None
    payload = json.loads(match.group(1))
    assert len(payload["processes"][0]["charts"][0]["x"]) <= 4000


def test_real_record_report_names_holder_and_fix() -> None:
    from pathlib import Path

    from memprobe.record import load

    record = load(str(Path(__file__).resolve().parent / "data" / "run-v1-real-loss-list.json"))
    out = _plain(record)
    assert "holder   __main__.losses" in out
    assert "torch.Tensor (holds autograd graphs)" in out
    assert "loss.item()" in out
    assert all(len(line) <= 80 for line in out.splitlines())
    page = report_html(record)
    assert "__main__.losses" in page
