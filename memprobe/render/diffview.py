"""The diff of two runs: terminal table (Rich), Markdown and JSON.

Target-provided strings (signal names, commands, holders) are cleaned and put
into ``Text`` objects, escaped for Markdown, or left to JSON's own escaping.
"""

from __future__ import annotations

from typing import List, Optional

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from memprobe.analysis.compare import (
    EXIT_BAD_INPUT,
    EXIT_REGRESSION,
    FindingDiff,
    RunDiff,
    SignalDiff,
    SignalFit,
)
from memprobe.record import Finding
from memprobe.render import _common as c
from memprobe.render._diff_json import DIFF_SCHEMA, diff_json
from memprobe.render._text import clean, fmt_rate, fmt_value, md, md_code

__all__ = ["render_diff", "diff_markdown", "diff_json", "DIFF_SCHEMA", "result_text"]

STATUS_STYLE = {
    "fixed": "bold green",
    "improved": "green",
    "persisting": "yellow",
    "new": "bold red",
    "regressed": "bold red",
    "same": "dim",
    "not_compared": "dim italic",
}


def result_text(diff: RunDiff) -> str:
    code = diff.exit_code
    if code == EXIT_REGRESSION:
        return f"REGRESSION: a new or worse leak (exit {code})"
    if code == EXIT_BAD_INPUT:
        return f"NOTHING COMPARABLE: no signal in common (exit {code})"
    return f"NO REGRESSION (exit {code})"


def _rate(rate: Optional[float], per: str, unit: str) -> str:
    return fmt_rate(rate, None, unit) if per == "step" else fmt_rate(None, rate, unit)


def _peak(fit: Optional[SignalFit], unit: str) -> str:
    return fmt_value(fit.peak, unit) if fit is not None else "–"


def _quiet(s: SignalDiff) -> bool:
    """Rows not worth a line: the same, no fitted rate on either side, a similar peak."""
    if s.status != "same" or s.rate_before is not None or s.rate_after is not None:
        return False
    pb, pa = (s.before.peak if s.before else None), (s.after.peak if s.after else None)
    if pb is None or pa is None:
        return True
    return abs(pa - pb) <= 0.1 * max(abs(pa), abs(pb), 1e-9)


def _quiet_line(diff: RunDiff) -> Optional[str]:
    quiet = [s for s in diff.signals if _quiet(s)]
    if not quiet:
        return None
    names = ", ".join(clean(s.signal, 60) for s in quiet[:8])
    more = f" and {len(quiet) - 8} more" if len(quiet) > 8 else ""
    return f"{len(quiet)} more signal(s) without a rate and with a similar peak: {names}{more}"


def _side(
    rate: Optional[float], fit: Optional[SignalFit], per: str, unit: str, note: str = ""
) -> Text:
    if fit is None:
        return Text("not growing" if note.startswith("not recorded") else "absent", style="dim")
    t = Text(_rate(rate, per, unit))
    t.append(f"\npeak {_peak(fit, unit)}", style="dim")
    return t


def _finding_rate(f: Optional[Finding], per: str) -> str:
    if f is None:
        return "–"
    return _rate(f.slope_per_step if per == "step" else f.slope_per_s, per, f.unit)


def _culprit(f: FindingDiff) -> str:
    parts = [clean(x, 200) for x in (f.culprit_type, f.holder) if x]
    return " held by ".join(parts) if parts else "–"


def render_diff(diff: RunDiff, console: Console) -> None:
    """Print the diff on ``console`` (readable at 80 columns)."""
    code = diff.exit_code
    style = "bold red" if code == EXIT_REGRESSION else "bold yellow" if code else "bold green"
    console.print(Text("memprobe diff", style="bold"))
    head = Table.grid(padding=(0, 1))
    head.add_column(style="bold", no_wrap=True)
    head.add_column(overflow="fold")
    head.add_row("Result", Text(result_text(diff), style=style))
    for r in diff.regressions[:10]:
        head.add_row("", Text("• " + clean(r, 200), style="red"))
    for label, rec in (("Before", diff.before), ("After", diff.after)):
        t = Text(clean(" ".join(rec.command), 200) + " ")
        t.append(f"({c.verdict_word(rec.verdict)})", style=c.VERDICT_STYLE.get(rec.verdict, ""))
        head.add_row(label, t)
    console.print(head)
    console.print()
    table = _titled_table("Signals")
    table.add_column("process", overflow="fold", max_width=12)
    table.add_column("signal", overflow="fold", ratio=1, min_width=10)
    table.add_column("status", no_wrap=True)
    table.add_column("before", overflow="fold")
    table.add_column("after", overflow="fold")
    for s in diff.signals:
        if _quiet(s):
            continue
        table.add_row(
            Text(clean(s.process, 40)),
            Text(clean(s.signal, 120)),
            Text(s.status.replace("_", " "), style=STATUS_STYLE.get(s.status, "")),
            _side(s.rate_before, s.before, s.per, s.unit, s.note),
            _side(s.rate_after, s.after, s.per, s.unit, s.note),
        )
    if not diff.signals:
        console.print(Text("No signals in either run.", style="dim"))
    else:
        console.print(table)
    quiet = _quiet_line(diff)
    if quiet:
        console.print(Padding(Text(quiet, style="dim"), (0, 0, 0, 1)))
        console.print()
    if diff.findings:
        ft = _titled_table("Findings")
        ft.add_column("process", overflow="fold", max_width=12)
        ft.add_column("signal", overflow="fold")
        ft.add_column("status", no_wrap=True)
        ft.add_column("culprit", overflow="fold", ratio=1)
        ft.add_column("before", overflow="fold")
        ft.add_column("after", overflow="fold")
        for f in diff.findings:
            ft.add_row(
                Text(clean(f.process, 40)),
                Text(clean(f.signal, 120)),
                Text(f.status.replace("_", " "), style=STATUS_STYLE.get(f.status, "")),
                Text(_culprit(f)),
                Text(_finding_rate(f.before, f.per)),
                Text(_finding_rate(f.after, f.per)),
            )
        console.print(ft)
    if diff.notes:
        console.print(Text("Not compared / notes", style="bold underline"))
        for n in diff.notes:
            console.print(Padding(Text("• " + clean(n, 400)), (0, 0, 0, 2)))


def diff_markdown(diff: RunDiff) -> str:
    out: List[str] = ["## memprobe diff", "", f"**{md(result_text(diff))}**", ""]
    out += [f"- {md(r, 200)}" for r in diff.regressions[:20]]
    out += [""] if diff.regressions else []
    for label, rec in (("Before", diff.before), ("After", diff.after)):
        out.append(
            f"- {label}: {md_code(' '.join(rec.command), 200)} ({md(c.verdict_word(rec.verdict))})"
        )
    out += ["", "### Signals", ""]
    if diff.signals:
        out += [
            "| process | signal | status | rate before | rate after | peak before | peak after |",
            "|---|---|---|---:|---:|---:|---:|",
        ]
    for s in (s for s in diff.signals if not _quiet(s)):
        status = md(s.status.replace("_", " "))
        if s.status in ("new", "regressed"):
            status = f"**{status}**"
        cells = [
            md(s.process, 40),
            md_code(s.signal, 120),
            status,
            md(_rate(s.rate_before, s.per, s.unit)),
            md(_rate(s.rate_after, s.per, s.unit)),
            md(_peak(s.before, s.unit)),
            md(_peak(s.after, s.unit)),
        ]
        out.append("| " + " | ".join(cells) + " |")
    quiet = _quiet_line(diff)
    if quiet:
        out += ["", md(quiet, 1000)]
    if diff.findings:
        out += [
            "",
            "### Findings",
            "",
            "| process | signal | status | culprit | rate before | rate after |",
            "|---|---|---|---|---:|---:|",
        ]
        for f in diff.findings:
            cells = [
                md(f.process, 40),
                md_code(f.signal, 120),
                md(f.status.replace("_", " ")),
                md_code(_culprit(f), 300),
                md(_finding_rate(f.before, f.per)),
                md(_finding_rate(f.after, f.per)),
            ]
            out.append("| " + " | ".join(cells) + " |")
    if diff.notes:
        out += ["", "### Not compared / notes", ""]
        out += [f"- {md(n)}" for n in diff.notes]
    out.append("")
    return "\n".join(out)


def _titled_table(title: str) -> Table:
    return Table(
        title=title,
        title_justify="left",
        title_style="bold underline",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
    )
