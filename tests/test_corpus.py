"""The sample corpus end to end: `memprobe run` on every leak_*/ok_* script.

Every ``leak_*.py`` must come out "leak" and every ``ok_*.py`` "no_leak",
through the real CLI as a subprocess, reading the run.json it writes. The
scripts run two at a time (these machines have two cores) in one session fixture,
``corpus_runs`` in conftest.py, shared with the attribution tests: each script runs once
per test session. Each test then asserts one script's verdict. Run with ``-s`` to see the
verdict, the duration and the leading finding of each.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from conftest import CORPUS_SCRIPTS, SAMPLES, CorpusRun
from memprobe import record as rec
from memprobe.analysis import analyze

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("script", CORPUS_SCRIPTS)
def test_corpus_verdict(script: str, corpus_runs: Dict[str, CorpusRun]) -> None:
    # GIVEN a corpus script whose name says whether it leaks
    expected = "leak" if script.startswith("leak_") else "no_leak"
    run = corpus_runs[script]
    # WHEN it has run under `memprobe run`
    assert not run.failure, f"{script} failed under memprobe:\n{run.failure}"
    data = run.record()
    secs = run.seconds
    leaks = [f for f in data["findings"] if f.get("kind", "leak") == "leak"]
    lead = leaks[0]["explanation"] if leaks else ""
    print(f"\n{script:32s} {data['verdict']:12s} {secs:5.1f}s {lead[:110]}")
    # THEN a leak is called a leak, with findings; a non-leak is never flagged (its
    # verdict settling to no_leak is asserted over the whole corpus below: one short run
    # may still end inconclusive, never leak)
    if expected == "leak":
        assert data["verdict"] == "leak", json.dumps(data.get("signals"), indent=1)[:4000]
        assert leaks and all(f["verdict"] == "leak" for f in leaks)
        # AND its culprit is held where the script's header says a person would look
        wanted = expected_holders(SAMPLES / script)
        named = [str((f.get("culprit") or {}).get("holder") or "") for f in leaks]
        assert not wanted or any(w.lower() in h.lower() for w in wanted for h in named), (
            wanted,
            named,
        )
    else:
        assert data["verdict"] != "leak", json.dumps(data.get("signals"), indent=1)[:4000]
        assert not leaks


def expected_holders(path: Path) -> List[str]:
    """The ``# holder: a|b`` header of a corpus script (alternatives), or []."""
    for line in path.read_text().splitlines()[:5]:
        if line.startswith("# holder:"):
            return [h.strip() for h in line.split(":", 1)[1].split("|") if h.strip()]
    return []


def test_corpus_non_leaks_settle_to_no_leak(corpus_runs: Dict[str, CorpusRun]) -> None:
    # GIVEN every non-leak of the corpus, run under `memprobe run`
    verdicts = {
        s: corpus_runs[s].record()["verdict"]
        for s in CORPUS_SCRIPTS
        if s.startswith("ok_") and not corpus_runs[s].failure
    }
    # THEN none is a leak, and all but at most one settle to no_leak within their run
    assert "leak" not in verdicts.values(), verdicts
    assert sum(v == "no_leak" for v in verdicts.values()) >= len(verdicts) - 1, verdicts


def first_stable_leak_step(record: rec.RunRecord) -> Optional[int]:
    """Replay the run step by step: the step from which the verdict is "leak" to the end."""
    main = next((p for p in record.processes if p.role == "main"), record.processes[0])
    steps = sorted({s for series in main.series.values() for s in series.step if s is not None})
    verdicts: List[Tuple[int, str]] = []
    for i in range(5, len(steps), max(1, len(steps) // 60)):
        upto = steps[i]
        cut = {}
        for name, ser in main.series.items():
            n = _n_upto(ser, upto)
            cut[name] = rec.Series(step=ser.step[:n], t=ser.t[:n], value=ser.value[:n])
        partial = replace(record, processes=[replace(main, series=cut)])
        verdicts.append((upto, analyze(partial).verdict))
    first = None
    for upto, verdict in verdicts:
        if verdict != "leak":
            first = None
        elif first is None:
            first = upto
    return first


def _n_upto(series: rec.Series, upto: int) -> int:
    last_t = max(
        (t for s, t in zip(series.step, series.t) if s is not None and s <= upto), default=-1.0
    )
    return sum(1 for t in series.t if t <= last_t)


def test_loss_list_leak_is_called_early_and_stays(
    corpus_runs: Dict[str, CorpusRun],
) -> None:
    # GIVEN the loss-list leak's run record
    run = corpus_runs["leak_loss_list.py"]
    assert not run.failure
    record = rec.load(str(run.path))
    total = record.processes[0].steps
    # WHEN the analysis is replayed on the run as it grew
    first = first_stable_leak_step(record)
    print(f"\nleak_loss_list: verdict 'leak' from step {first} of {total} on, and stays")
    # THEN it turned "leak" before the end and stayed so
    assert first is not None and first < total
