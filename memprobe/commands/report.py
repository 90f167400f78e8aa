"""``memprobe report``: show one run, or several nodes' runs as one."""

from __future__ import annotations

from typing import List, Optional

from memprobe.commands._common import emit, load_run, stderr_console, write_text
from memprobe.render.fmt import safe_text


def report_command(paths: List[str], html: Optional[str], fmt: str) -> None:
    records = [load_run(p) for p in paths]  # before the heavy imports: bad input fails fast
    if len(records) == 1:
        record = records[0]
    else:
        from memprobe.analysis.finalize import finalize
        from memprobe.collect.merge import merge_records

        record = finalize(merge_records(records))
    from memprobe.render import report

    if html is not None:
        from memprobe.render.html import report_html

        write_text(html, report_html(record))
    emit(
        fmt,
        lambda: report.report_markdown(record),
        lambda: report.report_json(record),
        lambda console: report.render_report(record, console),
    )
    if html is not None:
        stderr_console().print(safe_text(f"memprobe: HTML report → {html}", style="dim"))


__all__ = ["report_command"]
