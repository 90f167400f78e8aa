"""The report of one run as Markdown (for a CI comment or an issue)."""

from __future__ import annotations

from typing import List

from memprobe.analysis.compare import signal_fits
from memprobe.record import RunRecord
from memprobe.render import _common as c
from memprobe.render._text import fmt_duration, fmt_pct, fmt_rate, md, md_code, sparkline

__all__ = ["report_markdown"]

_CODE_ROWS = ("holder", "type", "line", "chain", "alloc")


def report_markdown(record: RunRecord) -> str:
    fits = signal_fits(record)
    out: List[str] = ["## memprobe report", ""]
    conf = c.run_confidence(record, fits)
    verdict = f"**{md(c.verdict_word(record.verdict).upper())}**"
    if conf is not None:
        verdict += f" (confidence {fmt_pct(conf)})"
    out += [
        f"- Verdict: {verdict}",
        f"- Command: {md_code(' '.join(record.command), 300)}",
        f"- Run: {md(fmt_duration(record.duration_s))}, {c.max_steps(record):,} steps, "
        f"{md(c.exit_text(record))}",
        f"- Limits: {md(c.limits_text(record))}",
        "",
        "### Findings",
        "",
    ]
    if not record.findings:
        out += ["No findings.", ""]
    for i, f in enumerate(record.findings, 1):
        word = c.verdict_word(f.verdict)
        out.append(
            f"{i}. **{md(word.upper() if f.verdict == 'leak' else word)}** "
            f"{md(c.finding_title(f, record))}"
        )
        if f.explanation:
            out.append(f"   - *{md(f.explanation, 600)}*")
        for label, value in c.finding_rows(f, record.cwd):
            shown = md_code(value, 600) if label in _CODE_ROWS else md(value, 600)
            out.append(f"   - {label}: {shown}")
        out.append("")
    for p in record.processes:
        pf = fits.get(p.pid, {})
        out += [f"### {md(c.process_title(p))}, {p.steps:,} steps", ""]
        if not pf:
            out += ["No samples.", ""]
            continue
        out += [
            "| signal | rate | verdict | peak | warm-up until | trend |",
            "|---|---:|---|---:|---|---|",
        ]
        for name, fit in pf.items():
            verdict_cell = md(c.verdict_word(fit.verdict))
            if fit.verdict is not None:
                verdict_cell += f" ({fmt_pct(fit.confidence)})"
            cells = [
                md_code(name, 80),
                md(fmt_rate(fit.slope_per_step, fit.slope_per_s, fit.unit)),
                verdict_cell,
                md(c.peak_text(fit)),
                md(c.warmup_text(fit) or "–"),
                sparkline(p.series[name].value, 20),
            ]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    if record.events:
        out += ["### Events", ""]
        for e in record.events[:20]:
            who = f"pid {e.pid}" if e.pid is not None else "run"
            out.append(f"- {e.t:.1f} s, {md(e.kind, 40)} ({who}): {md(e.message)}")
        out.append("")
    return "\n".join(out)
