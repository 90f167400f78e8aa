"""compare(): matching, statuses and exit codes; the diff renderers."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from typing import Dict, Tuple, cast

import pytest
import recordgen as g
from rich.console import Console

from memprobe import errors
from memprobe.analysis.compare import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    EXIT_REGRESSION,
    CompareOptions,
    compare,
    diff_exit_code,
    signal_fits,
)
from memprobe.record import Culprit, Process, RunRecord
from memprobe.render.diffview import DIFF_SCHEMA, diff_json, diff_markdown, render_diff
from memprobe.render.html import diff_html

MIB = 1024 * 1024


def _statuses(before: RunRecord, after: RunRecord, **kw: object) -> Dict[Tuple[str, str], str]:
    d = compare(before, after, CompareOptions(**kw))  # type: ignore[arg-type]
    return {(s.process, s.signal): s.status for s in d.signals}


def test_exit_codes_are_distinct_and_match_the_cli() -> None:
    assert len({EXIT_OK, EXIT_REGRESSION, EXIT_BAD_INPUT}) == 3
    assert EXIT_OK == 0 and EXIT_BAD_INPUT == errors.EXIT_BAD_INPUT
    assert EXIT_REGRESSION not in (1, errors.EXIT_LEAK)  # 1 is what a crash would give


def test_fixed_then_reverse_is_new() -> None:
    # GIVEN the leaky loop and its fixed twin
    leaky, fixed = g.leaky(), g.fixed(seed=2)
    # WHEN compared in order
    d = compare(leaky, fixed)
    # THEN every leaking signal and finding is fixed, and CI passes
    assert set(_statuses(leaky, fixed).values()) == {"fixed"}
    assert {f.status for f in d.findings} == {"fixed"}
    assert d.exit_code == diff_exit_code(d) == EXIT_OK
    # AND the reverse order is a regression
    r = compare(fixed, leaky)
    assert {s.status for s in r.signals} == {"new"}
    assert {f.status for f in r.findings} == {"new"}
    assert r.exit_code == EXIT_REGRESSION


def test_same_leak_rate_persists_within_noise() -> None:
    d = compare(g.leaky(seed=1), g.leaky(seed=2))
    assert {s.status for s in d.signals} == {"persisting"}
    assert {f.status for f in d.findings} == {"persisting"}
    assert d.exit_code == EXIT_OK
    assert (
        compare(g.leaky(seed=1), g.leaky(seed=2), CompareOptions(fail_on_persisting=True)).exit_code
        == EXIT_REGRESSION
    )


def test_faster_leak_regresses_slower_improves() -> None:
    slow, fast = g.leaky(leak_bytes_per_step=100 * 1024.0), g.leaky(leak_bytes_per_step=1 * MIB)
    assert _statuses(slow, fast)[("main", "rss_bytes")] == "regressed"
    assert _statuses(fast, slow)[("main", "rss_bytes")] == "improved"
    assert compare(slow, fast).exit_code == EXIT_REGRESSION
    assert compare(fast, slow).exit_code == EXIT_OK
    # a wide enough tolerance calls it the same leak
    assert _statuses(slow, fast, rel_tolerance=0.95)[("main", "rss_bytes")] == "persisting"


def test_thresholds_filter_the_gate() -> None:
    fixed, leaky = g.fixed(), g.leaky()
    # a new leak below the floor (bytes and counts) or below the confidence does not fail
    assert compare(
        fixed, leaky, CompareOptions(min_rate_bytes=10 * MIB, min_rate_count=1000)
    ).exit_code in (EXIT_OK, EXIT_REGRESSION)
    gated = compare(fixed, leaky, CompareOptions(min_rate_bytes=10 * MIB, min_rate_count=1000))
    assert gated.regressions == []
    assert compare(fixed, leaky, CompareOptions(min_confidence=0.999)).exit_code == EXIT_OK


def test_rate_change_inside_overlapping_intervals_is_same_leak() -> None:
    # GIVEN two leaks whose rates differ by 40% but whose intervals overlap (noisy)
    a, b = g.leaky(), g.leaky(leak_bytes_per_step=256 * 1024.0 * 1.4)
    sa = dict(a.signals)
    wide = {k: dataclasses.replace(v, ci_low=1.0, ci_high=1e9) for k, v in sa["1000"].items()}
    a = dataclasses.replace(a, signals={"1000": wide})
    assert _statuses(a, b)[("main", "rss_bytes")] == "persisting"


def test_processes_match_by_role_rank_worker_then_order() -> None:
    before = g.leaky(roles=(("main", None, None), ("worker", None, 0), ("worker", None, 1)))
    after = g.fixed(
        roles=(
            ("worker", None, 1),
            ("main", None, None),
            ("child", None, None),
            ("worker", None, 0),
        )
    )
    d = compare(before, after)
    how = {
        m.label: (m.before.pid if m.before else None, m.after.pid if m.after else None, m.how)
        for m in d.processes
    }
    assert how["main"] == (1000, 1001, "role")
    assert how["worker 0"] == (1001, 1003, "role")
    assert how["worker 1"] == (1002, 1000, "role")
    assert how["child"] == (None, 1002, "unmatched")
    assert any("child exists only in the after run" in n for n in d.notes)


def test_unmatched_roles_fall_back_to_order() -> None:
    before = g.leaky(roles=(("main", None, None),))
    after = g.fixed(roles=(("rank", 0, None),))
    d = compare(before, after)
    assert [(m.label, m.how) for m in d.processes] == [("rank 0", "order")]
    assert {s.status for s in d.signals} == {"fixed"}


def test_different_axes_schemas_and_signals_say_what_was_not_compared() -> None:
    before = g.leaky(command=["python", "a.py"])
    after = dataclasses.replace(
        g.fixed(x_axis="time", command=["python", "b.py"]), schema="memprobe.run/0"
    )
    p = after.processes[0]
    extra = dict(p.series)
    extra["cuda:0/allocated_bytes"] = extra.pop("py_objects")
    after = dataclasses.replace(after, processes=[dataclasses.replace(p, series=extra)])
    d = compare(before, after)
    text = " | ".join(d.notes)
    assert "x-axes differ (step vs time)" in text
    assert "schema versions differ" in text
    assert "different commands" in text
    assert "measured in one run only: cuda:0/allocated_bytes, py_objects" in text
    st = {s.signal: s for s in d.signals}
    assert st["py_objects"].status == "not_compared"
    assert st["rss_bytes"].per == "s" and st["rss_bytes"].status == "fixed"


def test_nothing_in_common_is_bad_input() -> None:
    empty = dataclasses.replace(g.fixed(), processes=[Process(pid=1, series={})], signals={})
    assert compare(empty, empty).exit_code == EXIT_BAD_INPUT
    # but a new leak still wins: it is a regression
    assert compare(empty, g.leaky()).exit_code == EXIT_REGRESSION


def test_findings_match_by_culprit_then_signal() -> None:
    before, after = g.leaky(seed=1), g.leaky(seed=2)
    f = after.findings[0]
    moved = dataclasses.replace(
        f, culprit=cast(Culprit, dict(f.culprit or {}, holder="__main__.other"))
    )
    d = compare(before, dataclasses.replace(after, findings=[moved, *after.findings[1:]]))
    assert [x.status for x in d.findings] == ["persisting", "persisting"]
    assert d.findings[0].holder == "__main__.other"


def test_signal_fits_tolerate_garbage_summaries() -> None:
    data = g.leaky().to_json()
    data["signals"] = {
        "1000": {"rss_bytes": {"verdict": 3, "slope_per_step": "x", "ci_low": None}},
        "junk": 5,
    }
    r = RunRecord.from_json(data)
    fits = signal_fits(r)
    assert fits[1000]["rss_bytes"].verdict is None
    assert fits[1000]["rss_bytes"].peak is not None
    assert fits[1000]["rss_bytes"].unit == "bytes"  # from the signal's name


def test_signal_fits_are_the_records_summaries() -> None:
    # GIVEN a record with summaries
    r = g.leaky()
    fits = signal_fits(r)
    for name, summary in r.signals["1000"].items():
        fit = fits[1000][name]
        # THEN each fit is the summary as the record keeps it, with its name and peak
        assert fit.to_json() == summary.to_json()
        assert fit.signal == name and fit.peak == max(r.processes[0].series[name].value)


def _render(d: object, width: int = 80) -> str:
    buf = io.StringIO()
    render_diff(d, Console(file=buf, width=width, force_terminal=True))  # type: ignore[arg-type]
    return re.sub(r"\x1b\[[0-9;]*m", "", buf.getvalue())


def test_terminal_diff() -> None:
    out = _render(compare(g.leaky(hostile=True), g.fixed(seed=2)))
    assert "NO REGRESSION (exit 0)" in out
    assert "fixed" in out and "rss_bytes" in out and "+256.0" in out
    assert all(len(line) <= 80 for line in out.splitlines())
    wide = _render(compare(g.leaky(hostile=True), g.fixed(seed=2)), width=200)
    assert "<script>alert(1)</script>" in wide and "[bold red]pwned[/]" in wide
    assert "\x07" not in wide and "\x1b" not in wide
    out = _render(compare(g.fixed(seed=2), g.leaky()))
    assert "REGRESSION: a new or worse leak (exit 3)" in out and "new" in out


def test_markdown_and_json_diff() -> None:
    d = compare(g.fixed(seed=2), g.leaky(hostile=True))
    md = diff_markdown(d)
    assert "**new**" in md and "REGRESSION" in md
    assert "<" not in re.sub(r"(`+).*?\1", "", md)
    doc = json.loads(diff_json(d))
    assert doc["schema"] == DIFF_SCHEMA and doc["exit_code"] == EXIT_REGRESSION
    assert doc["result"] == "regression"
    assert sorted(doc) == [
        "after",
        "before",
        "exit_code",
        "findings",
        "notes",
        "per",
        "regressions",
        "result",
        "schema",
        "signals",
    ]
    assert doc["regressions"] == d.regressions and d.regressions
    s = doc["signals"][0]
    assert sorted(s) == ["after", "before", "note", "per", "process", "signal", "status", "unit"]
    assert s["status"] == "new" and s["after"]["verdict"] == "leak"


@pytest.mark.parametrize("reverse", [False, True])
def test_diff_html(reverse: bool) -> None:
    a, b = g.leaky(hostile=True), g.fixed(seed=2)
    page = diff_html(compare(b, a) if reverse else compare(a, b))
    assert page.lower().count("<script") == 3
    assert "<script>alert(1)" not in page
    match = re.search(r'id="memprobe-data">(.*?)</script>', page, re.S)
    assert match is not None
    payload = json.loads(match.group(1))
    assert payload["kind"] == "diff"
    assert {r["status"] for r in payload["signal_rows"]} == ({"new"} if reverse else {"fixed"})
    assert payload["processes"][0]["charts"][0]["before"]["x"]


def test_census_signal_absent_after_means_not_growing() -> None:
    # GIVEN a leak seen through a container census signal that the fixed run never
    # recorded (census signals are written only while they grow), though it recorded others
    before, after = g.leaky(), g.fixed(seed=2)
    pb, pa = before.processes[0], after.processes[0]
    sb = dict(pb.series, **{"container:__main__.losses:len": pb.series["tensors"]})
    sa = dict(pa.series, **{"container:re._cache:len": pa.series["tensors"]})
    sums_b = dict(
        before.signals["1000"],
        **{"container:__main__.losses:len": before.signals["1000"]["tensors"]},
    )
    sums_a = dict(
        after.signals["1000"], **{"container:re._cache:len": after.signals["1000"]["tensors"]}
    )
    f = dataclasses.replace(before.findings[1], signal="container:__main__.losses:len")
    before = dataclasses.replace(
        before,
        processes=[dataclasses.replace(pb, series=sb)],
        signals={"1000": sums_b},
        findings=[f],
    )
    after = dataclasses.replace(
        after, processes=[dataclasses.replace(pa, series=sa)], signals={"1000": sums_a}
    )
    d = compare(before, after)
    st = {s.signal: s for s in d.signals}
    # THEN it is fixed, not "not compared", and so is its finding
    assert st["container:__main__.losses:len"].status == "fixed"
    assert st["container:re._cache:len"].status == "same"
    assert [x.status for x in d.findings] == ["fixed"]
    assert not any("only" in n for n in d.notes)
    # AND the other way round it is new, and fails the gate
    r = compare(after, before)
    assert {s.signal: s.status for s in r.signals}["container:__main__.losses:len"] == "new"
    assert r.exit_code == EXIT_REGRESSION


def test_gate_weighs_findings_not_every_signal() -> None:
    # GIVEN a new signal-level leak that the analysis did not make a finding of
    after = dataclasses.replace(g.leaky(), findings=[], verdict="no_leak")
    d = compare(g.fixed(), after)
    assert {s.status for s in d.signals} == {"new"}
    # THEN the gate passes by default, and fails with strict_signals
    assert d.exit_code == EXIT_OK and d.regressions == []
    strict = compare(g.fixed(), after, CompareOptions(strict_signals=True))
    assert strict.exit_code == EXIT_REGRESSION
    assert any("signal rss_bytes in main: new leak" == r for r in strict.regressions)
    # AND a run verdict that turns to leak with no findings to weigh fails too
    bare = dataclasses.replace(g.leaky(), findings=[])
    assert compare(g.fixed(), bare).regressions == ["the run verdict turned to leak"]


def test_inconclusive_before_at_the_same_rate_is_not_new() -> None:
    before = g.leaky(seed=1)
    sums = {
        k: dataclasses.replace(v, verdict="inconclusive") for k, v in before.signals["1000"].items()
    }
    before = dataclasses.replace(
        before, signals={"1000": sums}, findings=[], verdict="inconclusive"
    )
    d = compare(before, g.leaky(seed=2))
    assert {s.status for s in d.signals} == {"persisting"}
    assert d.exit_code == EXIT_OK


def test_real_loss_list_and_its_fixed_twin() -> None:
    # GIVEN two real runs kept as golden records: the loss-list leak and the loss.item() fix
    from pathlib import Path

    from memprobe.record import load

    data = Path(__file__).resolve().parent / "data"
    leaky = load(str(data / "run-v1-real-loss-list.json"))
    fixed = load(str(data / "run-v1-real-loss-item.json"))
    # WHEN compared in order THEN the culprit's finding is fixed and CI passes
    d = compare(leaky, fixed)
    by_signal = {f.signal: f for f in d.findings}
    assert by_signal["container:__main__.losses:len"].status == "fixed"
    assert by_signal["container:__main__.losses:len"].holder == "__main__.losses"
    assert d.exit_code == EXIT_OK
    # AND the reverse order is a regression naming the container
    r = compare(fixed, leaky)
    assert r.exit_code == EXIT_REGRESSION
    assert any("container:__main__.losses:len" in x for x in r.regressions)
    out = _render(r, width=80)
    assert "REGRESSION" in out and "__main__.losses" in out


def test_census_that_saw_no_growing_container_counts_as_not_growing() -> None:
    # GIVEN a fixed run whose census looked at containers but found none growing
    before = g.leaky()
    pb = before.processes[0]
    sb = dict(pb.series, **{"container:__main__.losses:len": pb.series["tensors"]})
    sums = dict(before.signals["1000"])
    sums["container:__main__.losses:len"] = sums["tensors"]
    before = dataclasses.replace(
        before, processes=[dataclasses.replace(pb, series=sb)], signals={"1000": sums}
    )
    fixed = g.fixed(seed=2)
    pa = fixed.processes[0]
    with_census = dataclasses.replace(pa, census=[{"step": 5, "containers": [], "types": {}}])
    without = dataclasses.replace(pa, census=[])
    # THEN with the census it is fixed; without one it could not be compared
    for proc, want in ((with_census, "fixed"), (without, "not_compared")):
        after: Process = proc
        d = compare(before, dataclasses.replace(fixed, processes=[after]))
        assert {s.signal: s.status for s in d.signals}["container:__main__.losses:len"] == want


def _inconclusive(record: RunRecord) -> RunRecord:
    """The record as a run too short to call: every summary inconclusive, no findings."""
    sums = {
        pid: {k: dataclasses.replace(v, verdict="inconclusive") for k, v in by.items()}
        for pid, by in record.signals.items()
    }
    return dataclasses.replace(record, signals=sums, findings=[], verdict="inconclusive")


def test_growth_gone_after_an_inconclusive_before_is_fixed() -> None:
    # GIVEN a before run that was inconclusive while growing +104.9 KiB/step (too short to
    # call), and an after run of the fixed loop, flat (issue 15)
    before = _inconclusive(g.leaky(leak_bytes_per_step=104.9 * 1024, seed=3))
    after = g.fixed(seed=4)
    # WHEN compared
    d = compare(before, after)
    by = {s.signal: s for s in d.signals}
    # THEN the growth that is gone is fixed, not "same", and CI passes
    assert by["rss_bytes"].status == "fixed", by["rss_bytes"]
    assert by["tensors"].status == "fixed"
    assert "inconclusive" in by["rss_bytes"].note
    assert d.exit_code == EXIT_OK
    # AND the other way round it is not a regression either (nothing leaks after)
    assert compare(after, before).exit_code == EXIT_OK


def test_inconclusive_before_at_a_rate_that_does_not_count_stays_same() -> None:
    # GIVEN a before run inconclusive at a few bytes a step (under the 1 KiB/step that
    # counts) and a flat after run
    before = _inconclusive(g.make_record(leak_bytes_per_step=3.0, seed=5))
    d = compare(before, g.fixed(seed=6))
    # THEN nothing is called fixed: there was no growth that matters
    assert {s.status for s in d.signals} == {"same"}


def test_leak_before_and_no_leak_after_lists_nothing_as_persisting() -> None:
    # GIVEN a leaky before run and a fixed after run whose analysis left RSS inconclusive
    # around zero (a noisy signal in a NO LEAK run, as USS/PSS were in issue 15)
    before = g.leaky(seed=7)
    after = g.fixed(seed=8)
    sums = dict(after.signals["1000"])
    sums["rss_bytes"] = dataclasses.replace(
        sums["rss_bytes"],
        verdict="inconclusive",
        slope_per_step=2048.0,
        slope_per_s=2048.0 / g.STEP_S,
        ci_low=-30 * 1024.0,
        ci_high=34 * 1024.0,
    )
    after = dataclasses.replace(after, signals={"1000": sums})
    assert after.verdict == "no_leak"
    # WHEN compared
    d = compare(before, after)
    # THEN every signal and finding that leaked before is fixed; none persists
    assert {s.signal: s.status for s in d.signals}["rss_bytes"] == "fixed"
    assert not [s for s in d.signals if s.status == "persisting"]
    assert {f.status for f in d.findings} == {"fixed"}
    assert d.exit_code == EXIT_OK


def test_findings_match_by_culprit_when_the_lead_signal_changed() -> None:
    # GIVEN the same leak in both runs, led by RSS before and by the tensor count after
    # (the grouping puts the signal it trusts most first; that may differ between runs)
    before = g.leaky(seed=9)
    after = g.leaky(seed=10)
    lead_rss = next(f for f in before.findings if f.signal == "rss_bytes")
    lead_tensors = next(f for f in after.findings if f.signal == "tensors")
    before = dataclasses.replace(
        before, findings=[dataclasses.replace(lead_rss, signals=["rss_bytes", "tensors"])]
    )
    after = dataclasses.replace(
        after, findings=[dataclasses.replace(lead_tensors, signals=["tensors", "rss_bytes"])]
    )
    # WHEN compared
    d = compare(before, after)
    # THEN it is one finding, matched by its holder, persisting: not one fixed and one new
    assert [(f.status, f.holder) for f in d.findings] == [
        ("persisting", "__main__.trainer.actor_losses")
    ]
    assert d.findings[0].before is not None and d.findings[0].after is not None


def test_a_census_series_too_short_for_a_rate_still_shows_the_growth_gone() -> None:
    # GIVEN a GPU leak's device tensors, +512 KiB/step before, and after the fix a series of
    # five census points (too few for a rate) that moved 6.6 MiB over 12,800 steps
    from memprobe.analysis.compare import CompareOptions, _status
    from memprobe.analysis.compare_fits import SignalFit

    name = "tensors:cuda:0_bytes"
    before = SignalFit(
        verdict="leak", unit="bytes", slope_per_step=2**19, n=7, signal=name, peak=6.3 * 2**30
    )
    flat = SignalFit(
        verdict="inconclusive",
        unit="bytes",
        n=5,
        signal=name,
        peak=8.4 * 2**20,
        low=1.8 * 2**20,
        span_steps=12_800,
    )
    # WHEN compared THEN fixed: the before rate would have added 6.3 GiB over those steps
    assert _status(before, flat, "step", CompareOptions())[0] == "fixed"
    # AND where the few points moved by more than a tenth of that, it still persists
    grew = dataclasses.replace(flat, peak=1.8 * 2**20 + 0.2 * 2**19 * 12_800)
    assert _status(before, grew, "step", CompareOptions())[0] == "persisting"
