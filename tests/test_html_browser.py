"""The HTML report in a real headless browser (Debian's chromium).

Chromium is driven over the DevTools protocol through ``--remote-debugging-pipe``
(NUL-separated JSON on file descriptors 3 and 4): standard library only, no
port, no websocket. The page must load with no console error, no exception and
no dialog (a hostile ``alert(1)`` would open one), draw its charts with a
non-zero size, and show the hostile names as text. Screenshots go to
``artifacts/`` (gitignored) for a person to look at.

Skips cleanly when no chromium is installed; CI installs one
(``apt-get install -y chromium``).
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest
import recordgen as g

from memprobe.analysis.compare import compare
from memprobe.render.html import diff_html, report_html

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _browser() -> Optional[str]:
    env = os.environ.get("MEMPROBE_TEST_BROWSER")
    if env:
        return env
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


BROWSER = _browser()
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no chromium installed")


_EXEC_SHIM = (
    "import fcntl, os, sys\n"
    "r, w = (fcntl.fcntl(int(fd), fcntl.F_DUPFD, 5) for fd in sys.argv[1:3])\n"
    "os.close(int(sys.argv[1])); os.close(int(sys.argv[2]))\n"
    "os.dup2(r, 3); os.dup2(w, 4); os.close(r); os.close(w)\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)


class Chromium:
    """A headless chromium and a minimal DevTools-protocol client over a pipe."""

    def __init__(self, exe: str, profile: str) -> None:
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()
        args = [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--mute-audio",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            "--remote-debugging-pipe",
            "--window-size=1280,1600",
            "about:blank",
        ]
        # chromium reads commands on fd 3 and writes replies and events on fd 4; a tiny
        # Python exec shim puts the pipe ends there (no preexec_fn in a threaded pytest)
        r, w = to_chrome_r, from_chrome_w
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _EXEC_SHIM, str(r), str(w), *args],
            pass_fds=(r, w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self.events: List[Dict[str, Any]] = []

    def send(
        self,
        method: str,
        params: Optional[Dict[str, Any]] = None,
        session: Optional[str] = None,
        timeout: float = 30.0,
    ) -> Dict[str, Any]:
        self._id += 1
        msg: Dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        for reply in self._messages(timeout):
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))
        raise TimeoutError(method)

    def wait_event(self, method: str, timeout: float = 30.0) -> Dict[str, Any]:
        for ev in self.events:
            if ev.get("method") == method:
                return ev
        for msg in self._messages(timeout):
            if msg.get("method") == method:
                return msg
        raise TimeoutError(method)

    def _messages(self, timeout: float) -> Iterator[Dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "method" in msg:
                    self.events.append(msg)
                yield msg
            ready, _, _ = select.select([self._r], [], [], max(0.0, deadline - time.monotonic()))
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buf += chunk

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    assert BROWSER is not None
    with tempfile.TemporaryDirectory(prefix="memprobe-chromium-") as profile:
        b = Chromium(BROWSER, profile)
        try:
            b.send("Browser.getVersion", timeout=60)
            yield b
        finally:
            b.close()


def _problems(events: List[Dict[str, Any]], session: str) -> List[str]:
    out = []
    for ev in events:
        if ev.get("sessionId") != session:
            continue
        m, p = ev.get("method"), ev.get("params", {})
        if m == "Runtime.exceptionThrown":
            out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            out.append(f"console.{p.get('type')}: " + json.dumps(p.get("args", []))[:500])
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            out.append("log: " + json.dumps(p.get("entry", {}))[:500])
        elif m == "Page.javascriptDialogOpening":
            out.append("dialog: " + json.dumps(p)[:200])
    return out


def _open(b: Chromium, path: Path) -> str:
    target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session: str = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
        "sessionId"
    ]
    for domain in ("Page", "Runtime", "Log"):
        b.send(f"{domain}.enable", session=session)
    b.events.clear()
    b.send("Page.navigate", {"url": path.as_uri()}, session=session)
    b.wait_event("Page.loadEventFired")
    return session


def _eval(b: Chromium, session: str, expr: str) -> Any:
    r = b.send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=session)
    assert "exceptionDetails" not in r, r
    return r["result"].get("value")


def _screenshot(b: Chromium, session: str, name: str) -> Path:
    shot = b.send(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session
    )
    ARTIFACTS.mkdir(exist_ok=True)
    out = ARTIFACTS / name
    out.write_bytes(base64.b64decode(shot["data"]))
    return out


CHART_SIZES = """Array.from(document.querySelectorAll('.uplot canvas')).map(
  c => [c.getBoundingClientRect().width, c.getBoundingClientRect().height])"""


def test_report_html_renders_charts_and_hostile_text(browser: Chromium) -> None:
    # GIVEN a leaking two-process run whose names are hostile
    record = g.leaky(hostile=True, roles=(("main", None, None), ("worker", None, 0)))
    ARTIFACTS.mkdir(exist_ok=True)
    page = ARTIFACTS / "report-hostile.html"
    page.write_text(report_html(record), encoding="utf-8")
    # WHEN the browser opens it
    session = _open(browser, page)
    time.sleep(0.3)
    shot = _screenshot(browser, session, "report-hostile.png")
    # THEN it loaded cleanly, drew one chart per signal and shows the names as text
    assert _problems(browser.events, session) == []
    assert _eval(browser, session, "document.body.getAttribute('data-rendered')") == "6"
    sizes = _eval(browser, session, CHART_SIZES)
    assert len(sizes) == 6 and all(w > 100 and h > 100 for w, h in sizes), sizes
    text = _eval(browser, session, "document.body.innerText")
    assert g.HOSTILE_TYPE in text
    assert "<b>x</b>" in text  # from the holder: shown, not interpreted
    assert _eval(browser, session, "document.querySelectorAll('main script, main b').length") == 0
    assert "LEAK" in _eval(browser, session, "document.getElementById('verdict').textContent")
    assert shot.stat().st_size > 10_000


def test_report_html_projection_toggle(browser: Chromium) -> None:
    # GIVEN a leaking run with a projected OOM
    page = ARTIFACTS / "report-leaky.html"
    ARTIFACTS.mkdir(exist_ok=True)
    page.write_text(report_html(g.leaky()), encoding="utf-8")
    session = _open(browser, page)
    # WHEN the projection of the first chart is shown
    n = _eval(browser, session, "document.querySelectorAll('button.toggle').length")
    assert n >= 1
    label = _eval(
        browser,
        session,
        """(() => { const b = document.querySelector('button.toggle');
        b.click(); return b.textContent; })()""",
    )
    # THEN the button flips and nothing went wrong
    assert label == "hide projection"
    _screenshot(browser, session, "report-leaky.png")
    assert _problems(browser.events, session) == []


def test_diff_html_renders(browser: Chromium) -> None:
    # GIVEN the diff of a leaky run and its fixed twin
    page = ARTIFACTS / "diff.html"
    ARTIFACTS.mkdir(exist_ok=True)
    page.write_text(diff_html(compare(g.leaky(hostile=True), g.fixed(seed=2))), encoding="utf-8")
    session = _open(browser, page)
    _screenshot(browser, session, "diff.png")
    # THEN tables and overlay charts are there, with "fixed" rows
    assert _problems(browser.events, session) == []
    sizes = _eval(browser, session, CHART_SIZES)
    assert len(sizes) == 3 and all(w > 100 and h > 100 for w, h in sizes), sizes
    statuses = _eval(
        browser,
        session,
        """Array.from(document.querySelectorAll(
        'table.diff-table tbody tr td:nth-child(3)')).map(td => td.textContent)""",
    )
    assert "fixed" in statuses
    assert g.HOSTILE_TYPE in _eval(browser, session, "document.body.innerText")
