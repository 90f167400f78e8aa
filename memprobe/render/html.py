"""Self-contained, offline HTML for a run report and a run diff.

The page is one file: the vendored uPlot (MIT, see ``vendor/README.md``), our
own script and style, and the data. Data goes in as JSON inside a
``<script type="application/json">`` element with ``<``, ``>``, ``&`` and the
JavaScript line separators written as ``\\uXXXX`` escapes, so no target string
can close the element; the page script inserts every string with
``textContent``. A Content-Security-Policy allows only the page's own two
scripts (by hash), so injected markup could not run script even if it slipped
through.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from importlib import resources
from typing import Any, Dict

from memprobe.analysis.compare import RunDiff
from memprobe.record import RunRecord
from memprobe.render import _common as c
from memprobe.render._html_data import diff_payload, report_payload
from memprobe.render._text import clean

__all__ = ["report_html", "diff_html", "json_for_script"]


def _asset(*parts: str) -> str:
    return resources.files("memprobe.render").joinpath(*parts).read_text(encoding="utf-8")


def json_for_script(data: Any) -> str:
    """JSON that is safe inside a <script> element (no way to close it or open a comment)."""
    s = json.dumps(c.json_safe(data), ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _csp_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _page(title: str, payload: Dict[str, Any]) -> str:
    uplot_js = _asset("vendor", "uPlot.iife.min.js")
    page_js = _asset("assets", "report.js")
    css = _asset("vendor", "uPlot.min.css") + "\n" + _asset("assets", "report.css")
    for code in (uplot_js, page_js):  # our inlining must not be closable from inside
        if "</script" in code.lower() or "<!--" in code:
            raise ValueError("an inlined script contains '</script' or '<!--'")
    csp = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src {_csp_hash(uplot_js)} {_csp_hash(page_js)}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(clean(title, 200))}</title>\n"
        f"<style>\n{css}\n</style>\n</head>\n<body>\n"
        '<main id="app"><noscript>This report needs JavaScript to draw its charts.'
        "</noscript></main>\n"
        '<script type="application/json" id="memprobe-data">'
        f"{json_for_script(payload)}</script>\n"
        f"<script>{uplot_js}</script>\n<script>{page_js}</script>\n</body>\n</html>\n"
    )


def report_html(record: RunRecord) -> str:
    """The whole report of ``record`` as one offline HTML document."""
    return _page("memprobe report: " + " ".join(record.command), report_payload(record))


def diff_html(diff: RunDiff) -> str:
    """The diff of two runs as one offline HTML document."""
    return _page("memprobe diff", diff_payload(diff))
