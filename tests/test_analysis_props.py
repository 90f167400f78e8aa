"""Property tests: the detector takes any finite series without raising or warning."""

from __future__ import annotations

from typing import List, Optional

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memprobe.analysis import analyze, judge_series
from memprobe.record import VERDICTS, ExitInfo, Limits, Process, RunRecord, Series

values = st.lists(
    st.floats(min_value=-1e15, max_value=1e15, allow_nan=False, allow_infinity=False),
    min_size=0,
    max_size=300,
)


@settings(max_examples=150, deadline=None)
@given(ys=values, unit=st.sampled_from(["bytes", "count"]), n_tests=st.integers(1, 500))
def test_judge_series_takes_any_finite_series(ys: List[float], unit: str, n_tests: int) -> None:
    # GIVEN any finite series on steps 0..n-1
    x = np.arange(float(len(ys)))
    # WHEN judged
    v = judge_series(x, ys, unit, n_tests=n_tests)
    # THEN a known verdict with a confidence in [0, 1] and a reason
    assert v.verdict in VERDICTS
    assert 0.0 <= v.confidence <= 1.0
    assert v.reason


@settings(max_examples=60, deadline=None)
@given(
    ys=values,
    steps=st.lists(st.one_of(st.none(), st.integers(0, 50)), min_size=0, max_size=300),
    name=st.sampled_from(["rss_bytes", "objects:dict", "cuda:0/reserved_bytes", "new:thing"]),
)
def test_analyze_takes_ragged_records(
    ys: List[float], steps: List[Optional[int]], name: str
) -> None:
    # GIVEN a record whose series has repeated, missing and unordered steps
    n = min(len(ys), len(steps))
    series = Series(step=steps[:n], t=[0.1 * i for i in range(n)], value=ys[:n])
    record = RunRecord(
        command=["x"],
        cwd="/",
        started_at=0.0,
        duration_s=1.0,
        exit=ExitInfo(code=0),
        limits=Limits(ram_bytes=2**33, gpu_bytes=[2**34]),
        x_axis="step",
        processes=[Process(pid=1, series={name: series, "rss_bytes": series})],
    )
    # WHEN analysed THEN a run verdict comes back, with a summary per signal
    a = analyze(record)
    assert a.verdict in VERDICTS
    assert set(a.signals["1"]) == {name, "rss_bytes"}
