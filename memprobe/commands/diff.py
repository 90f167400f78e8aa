"""``memprobe diff``: compare two runs and gate on new or worse leaks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from memprobe.commands._common import emit, load_run, write_text

if TYPE_CHECKING:
    from memprobe.analysis.compare import CompareOptions


def diff_command(
    before: str, after: str, fmt: str, html: Optional[str], options: Optional[CompareOptions] = None
) -> int:
    a, b = load_run(before), load_run(after)  # before the heavy imports: bad input fails fast
    from memprobe.analysis import compare
    from memprobe.render import diffview

    result = compare.compare(a, b, options or compare.CompareOptions())
    if html is not None:
        from memprobe.render.html import diff_html

        write_text(html, diff_html(result))
    emit(
        fmt,
        lambda: diffview.diff_markdown(result),
        lambda: diffview.diff_json(result),
        lambda console: diffview.render_diff(result, console),
    )
    return int(compare.diff_exit_code(result))


__all__ = ["diff_command"]
