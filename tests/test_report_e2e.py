"""Issue 7's "done when", end to end on real runs of the loss-list sample and its fixed twin.

`memprobe run` both, then: `report` shows the finding and its fix hint; `--html`
opens in headless chromium with charts; `diff leaky fixed` says fixed and exits
0; the reverse order exits with the regression code. Screenshots: artifacts/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator

import pytest

from memprobe.analysis.compare import EXIT_OK, EXIT_REGRESSION

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_scripts"
ARTIFACTS = ROOT / "artifacts"
STEPS = "1500"

pytestmark = pytest.mark.slow


def memprobe(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", COLUMNS="80")
    env.pop("MEMPROBE_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "memprobe", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def runs() -> Iterator[Dict[str, Path]]:
    with tempfile.TemporaryDirectory(prefix="memprobe-e2e-") as d:
        work = Path(d)
        out = {}
        for name, script in (("leaky", "leak_loss_list.py"), ("fixed", "ok_loss_item.py")):
            r = memprobe(
                "run",
                "--no-live",
                "-o",
                f"{name}.json",
                str(SAMPLES / script),
                "--steps",
                STEPS,
                cwd=work,
            )
            assert r.returncode == 0, r.stderr[-2000:]
            out[name] = work / f"{name}.json"
        yield out


def test_run_verdicts(runs: Dict[str, Path]) -> None:
    leaky = json.loads(runs["leaky"].read_text())
    fixed = json.loads(runs["fixed"].read_text())
    assert leaky["verdict"] == "leak" and leaky["findings"]
    assert fixed["verdict"] != "leak"


def test_report_shows_finding_and_fix_hint(runs: Dict[str, Path]) -> None:
    r = memprobe("report", str(runs["leaky"]), cwd=runs["leaky"].parent)
    assert r.returncode == 0, r.stderr
    assert "LEAK" in r.stdout and "Findings" in r.stdout
    assert "fix " in r.stdout  # the fix hint row
    assert all(len(line) <= 80 for line in r.stdout.splitlines())
    md = memprobe("report", str(runs["leaky"]), "--format", "markdown", cwd=runs["leaky"].parent)
    assert md.returncode == 0 and "- fix:" in md.stdout
    doc = json.loads(
        memprobe("report", str(runs["leaky"]), "--format", "json", cwd=runs["leaky"].parent).stdout
    )
    assert doc["verdict"] == "leak" and any(f["fix_hint"] for f in doc["findings"])


def test_diff_fixed_exits_ok_and_reverse_regresses(runs: Dict[str, Path]) -> None:
    cwd = runs["leaky"].parent
    fwd = memprobe("diff", str(runs["leaky"]), str(runs["fixed"]), cwd=cwd)
    assert fwd.returncode == EXIT_OK, fwd.stdout + fwd.stderr
    assert "fixed" in fwd.stdout and "NO REGRESSION" in fwd.stdout
    rev = memprobe("diff", str(runs["fixed"]), str(runs["leaky"]), cwd=cwd)
    assert rev.returncode == EXIT_REGRESSION, rev.stdout + rev.stderr
    assert "new" in rev.stdout and "REGRESSION" in rev.stdout


def test_html_in_headless_browser(runs: Dict[str, Path]) -> None:
    from test_html_browser import (
        BROWSER,
        CHART_SIZES,
        Chromium,
        _eval,
        _open,
        _problems,
        _screenshot,
    )

    if BROWSER is None:
        pytest.skip("no chromium installed")
    ARTIFACTS.mkdir(exist_ok=True)
    cwd = runs["leaky"].parent
    report, diff = ARTIFACTS / "e2e-report-leaky.html", ARTIFACTS / "e2e-diff.html"
    assert memprobe("report", str(runs["leaky"]), "--html", str(report), cwd=cwd).returncode == 0
    assert (
        memprobe(
            "diff", str(runs["leaky"]), str(runs["fixed"]), "--html", str(diff), cwd=cwd
        ).returncode
        == EXIT_OK
    )
    with tempfile.TemporaryDirectory(prefix="memprobe-chromium-") as profile:
        b = Chromium(BROWSER, profile)
        try:
            b.send("Browser.getVersion", timeout=60)
            for page, shot in ((report, "e2e-report-leaky.png"), (diff, "e2e-diff.png")):
                session = _open(b, page)
                time.sleep(0.3)
                _screenshot(b, session, shot)
                assert _problems(b.events, session) == []
                sizes = _eval(b, session, CHART_SIZES)
                assert sizes and all(w > 100 and h > 100 for w, h in sizes), sizes
        finally:
            b.close()
