"""The report of one run: terminal (Rich), Markdown and JSON.

Every string that comes from the target goes through ``_text.clean`` and into a
``rich.text.Text`` — never into a markup string — so a class named
``[bold]x[/]`` or one carrying escape sequences prints as the text it is.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from rich import box
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from memprobe.analysis.compare import SignalFit, signal_fits
from memprobe.record import Finding, Process, RunRecord
from memprobe.render import _common as c
from memprobe.render._report_md import report_markdown
from memprobe.render._text import clean, fmt_duration, fmt_pct, fmt_rate, sparkline

__all__ = ["render_report", "report_markdown", "report_json", "FINDINGS_SCHEMA"]

FINDINGS_SCHEMA = "memprobe.findings/1"
SPARK_WIDTH = 12
MAX_EVENTS = 8


def render_report(record: RunRecord, console: Console) -> None:
    """Print the report of ``record`` on ``console`` (readable at 80 columns)."""
    fits = signal_fits(record)
    console.print(_header(record, fits))
    console.print()
    console.print(Text("Findings", style="bold underline"))
    if not record.findings:
        console.print(Padding(Text("No findings.", style="green"), (0, 0, 0, 2)))
    for i, f in enumerate(record.findings, 1):
        console.print(_finding(i, f, record))
    for p in record.processes:
        console.print()
        console.print(_process(p, fits.get(p.pid, {}), record))
    notes = _events(record)
    if notes is not None:
        console.print()
        console.print(notes)


def _verdict_text(fit: SignalFit) -> Text:
    word = c.verdict_word(fit.verdict)
    t = Text(
        word.upper() if fit.verdict == "leak" else word,
        style=c.VERDICT_STYLE.get(fit.verdict or "", "dim"),
    )
    if fit.verdict in ("leak", "no_leak"):
        t.append(f" {fmt_pct(fit.confidence)}", style="dim")
    return t


def _header(record: RunRecord, fits: Dict[int, Dict[str, SignalFit]]) -> RenderableType:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    verdict = Text(
        c.verdict_word(record.verdict).upper(), style=c.VERDICT_STYLE.get(record.verdict, "bold")
    )
    conf = c.run_confidence(record, fits)
    if conf is not None:
        verdict.append(f"  confidence {fmt_pct(conf)}")
    grid.add_row("Verdict", verdict)
    if record.verdict == "inconclusive":
        need = c.needed_text(fits)
        if need:
            grid.add_row("Needs", Text(need))
    grid.add_row("Command", Text(clean(" ".join(record.command), 300)))
    steps = c.max_steps(record)
    run = f"{fmt_duration(record.duration_s)}, {steps:,} steps, {c.exit_text(record)}"
    grid.add_row("Run", Text(run))
    grid.add_row("Limits", Text(c.limits_text(record)))
    if record.marks:
        grid.add_row("Marks", Text(c.marks_text(record.marks)))
    return Group(Text("memprobe report", style="bold"), grid)


def _finding(i: int, f: Finding, record: RunRecord) -> RenderableType:
    word = c.verdict_word(f.verdict)
    head = Text(
        word.upper() if f.verdict == "leak" else word, style=c.VERDICT_STYLE.get(f.verdict, "bold")
    )
    if f.kind != "leak":
        head.append(f" [{clean(f.kind, 30)}]", style="magenta")
    head.append(" " + c.finding_title(f, record))
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="cyan", no_wrap=True, width=8)
    grid.add_column(overflow="fold")
    for label, value in c.finding_rows(f, record.cwd):
        grid.add_row(label, Text(value, style="bold green" if label == "fix" else ""))
    body: List[RenderableType] = [head]
    if f.explanation:
        body.append(Text(clean(f.explanation, 600), style="italic"))
    body.append(grid)
    outer = Table.grid(padding=(0, 1))
    outer.add_column(no_wrap=True, justify="right", width=3)
    outer.add_column(overflow="fold")
    outer.add_row(f"{i}.", Group(*body))
    return outer


def _spark(p: Process, name: str, fit: SignalFit) -> Text:
    xs, ys, _axis = c.fit_points(p.series[name], fit, p)
    pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
    line = sparkline([y for _, y in pts], SPARK_WIDTH)
    warm = 0
    if fit.warmup_end_x is not None and pts:
        inside = sum(1 for x, _ in pts if x <= fit.warmup_end_x)
        warm = min(len(line), -(-inside * len(line) // len(pts)))
    style = c.VERDICT_STYLE.get(fit.verdict or "", "")
    t = Text(line[:warm], style="dim")
    t.append(line[warm:], style=style.replace("bold ", ""))
    return t


def _process(p: Process, fits: Dict[str, SignalFit], record: RunRecord) -> RenderableType:
    title = Text(c.process_title(p), style="bold")
    extra = f" · {p.steps:,} steps"
    if p.ended and p.ended != "exit":
        extra += f" · {clean(p.ended, 20)}"
    if not p.has_agent:
        extra += " · no agent (sampled from outside)"
    title.append(extra, style="dim")
    if not fits:
        return Group(title, Padding(Text("no samples", style="dim"), (0, 0, 0, 2)))
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False, show_edge=False)
    table.add_column("signal", overflow="fold", ratio=1, min_width=16)
    table.add_column("rate", justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("peak", justify="right", no_wrap=True)
    table.add_column("trend", no_wrap=True, width=SPARK_WIDTH)
    warmups: Dict[str, List[str]] = {}
    for name, fit in sorted(fits.items(), key=lambda kv: c.row_rank(kv[1])):
        rate = fmt_rate(fit.slope_per_step, fit.slope_per_s, fit.unit)
        table.add_row(
            Text(clean(name, 80)),
            Text(rate),
            _verdict_text(fit),
            Text(c.peak_text(fit)),
            _spark(p, name, fit),
        )
        w = c.warmup_text(fit)
        if w:
            warmups.setdefault(w, []).append(clean(name, 80))
    parts: List[RenderableType] = [title, Padding(table, (0, 0, 0, 2))]
    for end, names in warmups.items():
        which = "all signals" if len(names) == len(fits) else ", ".join(names)
        parts.append(
            Padding(Text(f"warm-up (dim in trend) until {end}: {which}", style="dim"), (0, 0, 0, 2))
        )
    return Group(*parts)


def _events(record: RunRecord) -> Optional[RenderableType]:
    if not record.events:
        return None
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    for e in record.events[:MAX_EVENTS]:
        who = f"pid {e.pid}" if e.pid is not None else "run"
        grid.add_row(f"{e.t:8.1f}s", Text(f"{clean(e.kind, 40)} ({who}): {clean(e.message)}"))
    more = len(record.events) - MAX_EVENTS
    title = Text("Events", style="bold underline")
    if more > 0:
        title.append(f" (first {MAX_EVENTS} of {len(record.events)})", style="dim")
    return Group(title, Padding(grid, (0, 0, 0, 2)))


def _finding_json(f: Finding, record: RunRecord) -> Dict[str, Any]:
    proc = c.process_by_pid(record).get(f.pid) if f.pid is not None else None
    return {
        "signal": f.signal,
        "pid": f.pid,
        "process": proc.label if proc else None,
        "kind": f.kind,
        "verdict": f.verdict,
        "unit": f.unit,
        "slope_per_step": f.slope_per_step,
        "slope_per_s": f.slope_per_s,
        "confidence": f.confidence,
        "projected_oom": f.projected_oom,
        "culprit": None
        if f.culprit is None
        else {
            "type": f.culprit.get("type"),
            "holder": f.culprit.get("holder"),
            "location": f.culprit.get("location"),
            "holds_autograd_graph": f.culprit.get("holds_autograd_graph"),
        },
        "explanation": f.explanation,
        "fix_hint": f.fix_hint,
        "evidence": f.evidence,
    }


def report_json(record: RunRecord) -> str:
    """The findings only, with stable keys (sorted; ``schema`` names the shape)."""
    doc = {
        "schema": FINDINGS_SCHEMA,
        "verdict": record.verdict,
        "command": record.command,
        "findings": [_finding_json(f, record) for f in record.findings],
    }
    return (
        json.dumps(c.json_safe(doc), indent=2, sort_keys=True, ensure_ascii=True, allow_nan=False)
        + "\n"
    )
