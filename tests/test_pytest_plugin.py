"""The pytest plugin, through pytester on real inner test files (a pytest in a subprocess,
which loads the plugin from memprobe's pytest11 entry point as a user's pytest would)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from memprobe.pytest_plugin import Limits, census_steps, failure_message, parse_size, record_name
from memprobe.record import Culprit, Finding, load

pytest_plugins = ["pytester"]

INNER = """
import pytest

CACHE = []


class Row:
    def __init__(self):
        self.cells = list(range(10))


def test_leaky():
    CACHE.append(Row())


def test_clean():
    rows = [Row() for _ in range(200)]
    text = ",".join(str(r.cells) for r in rows)
    assert text
    del rows


class Store:
    def __init__(self):
        self.rows = []


@pytest.fixture
def store():
    return Store()


def test_fixture_leak(store):
    store.rows.append({"id": len(store.rows), "tags": ["a", "b"]})
"""

TORCH_INNER = """
import torch

torch.set_num_threads(1)
KEPT = []


def test_tensor_leak():
    KEPT.append(torch.randn(64))


def test_tensor_clean():
    x = torch.randn(64, 64)
    assert float((x @ x).sum()) == float((x @ x).sum())
"""


def _findings(path: Path) -> str:
    """The verdict, findings and census steps of a saved record, for a failure message."""
    rec = load(str(path))
    lines = [f"verdict {rec.verdict}"]
    for proc in rec.processes:
        lines.append(f"censuses at steps {[c.get('step') for c in proc.census]}")
    for by in rec.signals.values():
        for name, s in sorted(by.items()):
            if s.verdict not in (None, "no_leak") or "test_marked" in name:
                lines.append(f"  {name}: {s.verdict} {s.slope_per_step} {s.reason}")
    return "\n".join(lines)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.syspathinsert()
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v", *args, timeout=300)


@pytest.mark.slow  # an inner pytest in a subprocess: in CI, out of the fast loop
def test_leaky_test_fails_with_its_holder_clean_one_passes(pytester: pytest.Pytester) -> None:
    # GIVEN a test that keeps one object per call in a module-level list, one that frees
    # what it allocates, and one that adds to its fixture's list
    pytester.makepyfile(test_inner=INNER)
    # WHEN pytest runs them with --memprobe
    result = _run(pytester, "--memprobe")
    # THEN the leaky ones fail naming what grows and who holds it; the clean one passes
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert "test_inner.py::test_clean PASSED" in out
    assert "culprit: test_inner.Row held by test_inner.CACHE" in out
    assert "held by fixture.store.rows" in out
    assert "memory grows with every repetition" in out


def test_plugin_is_off_unless_asked(pytester: pytest.Pytester) -> None:
    # GIVEN the same tests and a marker with thresholds; WHEN pytest runs without --memprobe
    pytester.makepyfile(
        test_inner=INNER
        + """
CALLS = []


@pytest.mark.memprobe(repetitions=20)
def test_marked():
    CALLS.append(1)


def test_each_test_ran_once():
    assert CALLS == [1]
"""
    )
    result = _run(pytester, "-W", "error::pytest.PytestUnknownMarkWarning")
    # THEN every test runs once, as without the plugin, and the marker is known
    result.assert_outcomes(passed=5)


@pytest.mark.slow  # an inner pytest in a subprocess: in CI, out of the fast loop
def test_marked_only_and_marker_thresholds(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_marked="""
import pytest

A, B, C = [], [], []


class Row:
    def __init__(self):
        self.cells = list(range(10))


@pytest.mark.memprobe(max_objects_per_repetition=5, max_bytes_per_repetition="64 KiB")
def test_allowed_growth():
    A.append(Row())


@pytest.mark.memprobe(repetitions=20, warmup=1)
def test_over_the_limit():
    B.append(Row())


def test_unmarked_leak_is_not_repeated():
    C.append(Row())
    assert len(C) == 1
"""
    )
    saved = pytester.path / "records"
    result = _run(pytester, "--memprobe-marked", "--memprobe-save", str(saved))
    # each repeated test's record is kept (pass or fail) and says what was judged: shown
    # with the failure when the outcome is not the one expected
    records = sorted(p.name for p in saved.iterdir())
    assert records == [
        "test_marked.py__test_allowed_growth.json",
        "test_marked.py__test_over_the_limit.json",
    ]
    report = _findings(saved / "test_marked.py__test_over_the_limit.json")
    assert result.parseoutcomes() == {"passed": 2, "failed": 1}, report
    out = result.stdout.str()
    assert "test_over_the_limit FAILED" in out
    assert "20 repetitions after 1 warm-up" in out
    assert "held by test_marked.B" in out


@pytest.mark.slow  # an inner pytest in a subprocess: in CI, out of the fast loop
def test_a_byte_allowance_alone_judges_counts_by_their_bytes(pytester: pytest.Pytester) -> None:
    # GIVEN two tests with only a byte allowance (as pytest-memray's limit_leaks): one keeps
    # a small row per call (well under it), one keeps 64 KiB per call (over it)
    pytester.makepyfile(
        test_bytes="""
import pytest

SMALL, BIG = [], []


@pytest.mark.memprobe(max_bytes_per_repetition="64 KiB")
def test_small_rows_within_the_allowance():
    SMALL.append([1, 2, 3])


@pytest.mark.memprobe(max_bytes_per_repetition="1 KiB")
def test_big_buffers_over_the_allowance():
    BIG.append(bytearray(64 * 1024))
"""
    )
    result = _run(pytester, "--memprobe")
    # THEN the first passes (its one list per call is within its bytes) and the second fails
    # naming what keeps the buffers
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "test_big_buffers_over_the_allowance FAILED" in out
    assert "held by test_bytes.BIG" in out
    assert "any number of objects per repetition" in out


def test_bad_marker_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
import pytest


@pytest.mark.memprobe(repetitions=3)
def test_too_few():
    pass
"""
    )
    result = _run(pytester, "--memprobe")
    assert result.ret != 0
    assert "repetitions >= " in result.stdout.str() + result.stderr.str()


@pytest.mark.slow
def test_torch_tensors_kept_in_a_global_list_are_caught(pytester: pytest.Pytester) -> None:
    pytest.importorskip("torch")
    pytester.makepyfile(test_torch_inner=TORCH_INNER)
    result = _run(pytester, "--memprobe")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "test_tensor_leak FAILED" in out
    assert "culprit: torch.Tensor held by test_torch_inner.KEPT" in out


# -- pure parts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [(0, 0.0), (4096, 4096.0), ("512", 512.0), ("4 KB", 4000.0), ("4KiB", 4096.0),
     ("1.5 MiB", 1.5 * 2**20), ("2 mb", 2e6)],
)  # fmt: skip
def test_parse_size(text: object, expected: float) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["lots", "-1", -5, True, "4 XB"])
def test_parse_size_refuses(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_size(bad)


def test_census_steps_baseline_naming_following_and_last() -> None:
    assert census_steps(30) == [5, 6, 30]
    assert census_steps(20) == [5, 6, 20]


def test_failure_message_honours_the_limits() -> None:
    # GIVEN a leak of 2 objects and 3 KiB per repetition
    objects = Finding(
        "objects:x.Row",
        1,
        "leak",
        slope_per_step=2.0,
        unit="count",
        culprit=cast(Culprit, {"type": "x.Row", "holder": "x.CACHE"}),
        explanation="grows",
    )
    memory = Finding("rss_bytes", 1, "leak", slope_per_step=3072.0, unit="bytes")
    quiet = Finding("py_alloc_blocks", 1, "no_leak", slope_per_step=0.0, unit="count")
    findings = [objects, memory, quiet]  # fmt: skip
    # THEN default limits fail it, naming the holder; limits above both pass it
    message = failure_message(findings, Limits())
    assert message is not None and "x.Row held by x.CACHE" in message
    assert "rss_bytes +3,072 B/repetition" in message
    assert failure_message(findings, Limits(max_objects_per_repetition=2,
                                            max_bytes_per_repetition=4096)) is None  # fmt: skip
    only_bytes = failure_message(findings, Limits(max_objects_per_repetition=5))
    assert only_bytes is not None and "x.CACHE" not in only_bytes


def test_record_names_are_file_names_from_the_test_id() -> None:
    assert record_name("tests/test_x.py::test_y") == "tests_test_x.py__test_y.json"
    assert record_name("test_p.py::test_q[a b/1]") == "test_p.py__test_q_a_b_1_.json"


def test_an_unwritable_save_directory_is_a_usage_error(pytester: pytest.Pytester) -> None:
    # GIVEN a save directory under a plain file (it can never be made)
    pytester.makepyfile(test_inner=INNER)
    blocker = pytester.path / "blocker"
    blocker.write_text("a file, not a directory")
    # WHEN pytest is asked to keep records there
    result = _run(pytester, "--memprobe", "--memprobe-save", str(blocker / "records"))
    # THEN it stops before running anything, saying why in one line, no traceback
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--memprobe-save" in err and "Traceback" not in err
