"""pytest plugin: fail a test whose memory or live objects grow with every repetition.

Off unless asked: ``pytest --memprobe`` repeats every test function, ``--memprobe-marked``
only those marked ``@pytest.mark.memprobe(...)``; without either the marker does nothing.
A test selected runs ``warmup`` times (caches fill, lazy state is built), then
``repetitions`` times under ``memprobe.track()``, one step per repetition. The verdict is
memprobe's own (the same statistics and culprit search as ``memprobe run``): a test fails
when a leak finding grows faster than its threshold, and the failure names what grows and
who holds it (``test_module.CACHE``; a fixture's value as ``fixture.<name>.<attr>``).

Fixtures are set up once per test, as pytest does: repetitions share them, so a test that
keeps adding to a fixture's state leaks into it, as it would across a long-lived process.
Async test functions are run once, unrepeated.
"""

from __future__ import annotations

import gc
import inspect
import os
import re
import sys
import types
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import pytest

from memprobe.analysis.options import DetectOptions
from memprobe.inprocess import Run, TrackOptions
from memprobe.record import Finding

__all__ = ["Limits", "limits_for", "parse_size"]

WARMUP = 3
REPETITIONS = 30
MIN_REPETITIONS = 20  # fewer: the points after the censuses that name what grows are too few
FIXTURE_MODULE = "fixture"  # the root fixture values are reached from in holder paths
MARKER = (
    "memprobe(repetitions=30, warmup=3, max_bytes_per_repetition=0, "
    "max_objects_per_repetition=0): with --memprobe or --memprobe-marked, repeat this test "
    "and fail it if memory or live objects grow faster than this per repetition "
    "(sizes as bytes or '4 KB', '1.5 MiB')"
)
_BYTE_UNITS = {"bytes"}
# memprobe run's thresholds are tuned for training runs (tens of steps, growth of 64 heap
# objects or 1 MiB); repetitions of one test are identical by construction, so the same
# statistics judge them with smaller practical thresholds: steady growth over ten
# repetitions, eight objects, a pymalloc block a repetition or 64 KiB in all. The marker's
# limits apply on top.
REPETITION_DETECT = DetectOptions(
    min_span_steps=10.0,
    min_growth_count=4.0,
    min_heap_growth_count=8.0,
    min_growth_bytes=64 * 1024.0,
    min_growth_fraction=0.0,
    min_blocks_per_step=1.0,
)


@dataclass(frozen=True)
class Limits:
    """How one test is repeated and how much growth per repetition it is allowed."""

    repetitions: int = REPETITIONS
    warmup: int = WARMUP
    max_bytes_per_repetition: float = 0.0
    max_objects_per_repetition: float = 0.0


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmgtp]?)(i?)b?\s*$", re.IGNORECASE)


def parse_size(value: Any) -> float:
    """Bytes from a number or a string such as ``"512"``, ``"4 KB"``, ``"1.5 MiB"``."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"a size cannot be negative: {value!r}")
        return float(value)
    m = _SIZE.match(str(value))
    if m is None:
        raise ValueError(f"not a size: {value!r} (write 4096, '4 KB' or '1.5 MiB')")
    number, prefix, binary = m.groups()
    base = 1024 if binary or not prefix else 1000
    return float(number) * float(base ** "_kmgtp".index(prefix.lower() or "_"))


def limits_for(item: pytest.Item, config: pytest.Config) -> Limits:
    """The CLI's defaults, overridden by the test's ``memprobe`` marker keywords."""
    kw: Dict[str, Any] = {}
    marker = item.get_closest_marker("memprobe")
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.memprobe takes keywords only "
                "(repetitions=, warmup=, max_bytes_per_repetition=, max_objects_per_repetition=)"
            )
        kw = dict(marker.kwargs)
    unknown = set(kw) - {
        "repetitions",
        "warmup",
        "max_bytes_per_repetition",
        "max_objects_per_repetition",
    }
    if unknown:
        raise pytest.UsageError(f"{item.nodeid}: unknown memprobe marker keyword(s) {unknown}")
    try:
        reps = int(kw.get("repetitions", config.getoption("memprobe_repetitions")))
        warmup = int(kw.get("warmup", config.getoption("memprobe_warmup")))
        max_bytes = parse_size(kw.get("max_bytes_per_repetition", 0))
        # a byte allowance alone (pytest-memray's limit_leaks) allows the objects that make
        # up those bytes: counts are then judged by the bytes their holder keeps
        default_objects = float("inf") if "max_bytes_per_repetition" in kw else 0.0
        max_objects = float(kw.get("max_objects_per_repetition", default_objects))
    except ValueError as e:
        raise pytest.UsageError(f"{item.nodeid}: memprobe marker: {e}") from None
    if reps < MIN_REPETITIONS or warmup < 0 or max_objects < 0:
        raise pytest.UsageError(
            f"{item.nodeid}: memprobe needs repetitions >= {MIN_REPETITIONS} (its verdict "
            "needs about ten points) and warmup, max_objects_per_repetition >= 0"
        )
    return Limits(reps, warmup, max_bytes, max_objects)


# -- hooks ---------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("memprobe", "memory leaks per repetition (memprobe)")
    group.addoption(
        "--memprobe",
        action="store_true",
        default=False,
        help="repeat every test and fail those whose memory or objects grow per repetition",
    )
    group.addoption(
        "--memprobe-marked",
        action="store_true",
        default=False,
        help="like --memprobe, for tests marked @pytest.mark.memprobe only",
    )
    group.addoption(
        "--memprobe-repetitions",
        type=int,
        default=REPETITIONS,
        dest="memprobe_repetitions",
        help=f"measured repetitions per test (default {REPETITIONS})",
    )
    group.addoption(
        "--memprobe-save",
        default=None,
        metavar="DIR",
        dest="memprobe_save",
        help="keep each repeated test's record in DIR as <test id>.json "
        "(memprobe report / diff / --html read it)",
    )
    group.addoption(
        "--memprobe-warmup",
        type=int,
        default=WARMUP,
        dest="memprobe_warmup",
        help=f"repetitions before measuring (default {WARMUP})",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    if config.getoption("memprobe") or config.getoption("memprobe_marked"):
        save = config.getoption("memprobe_save")
        if save:
            try:
                os.makedirs(save, exist_ok=True)
            except OSError as e:
                raise pytest.UsageError(f"--memprobe-save {save}: {e.strerror or e}") from None
        marked_only = not config.getoption("memprobe")
        config.pluginmanager.register(_Repeater(marked_only, save), "memprobe-repeater")


class _Repeater:
    def __init__(self, marked_only: bool, save_dir: Optional[str] = None) -> None:
        self.marked_only = marked_only
        self.save_dir = save_dir

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Optional[bool]:
        if self.marked_only and pyfuncitem.get_closest_marker("memprobe") is None:
            return None
        fn = pyfuncitem.obj
        if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            return None  # an event-loop plugin runs it; once
        limits = limits_for(pyfuncitem, pyfuncitem.config)
        names = pyfuncitem._fixtureinfo.argnames  # what pytest's own call passes
        args = {name: pyfuncitem.funcargs[name] for name in names}
        save = None
        if self.save_dir:
            save = os.path.join(self.save_dir, record_name(pyfuncitem.nodeid))
        message = repeat(fn, args, limits, save)
        if message is not None:
            pytest.fail(message, pytrace=False)
        return True


def repeat(
    fn: Any, args: Dict[str, Any], limits: Limits, save: Optional[str] = None
) -> Optional[str]:
    """Run ``fn(**args)`` warm-up + measured times; the failure message, or None if clean.
    ``save``: a path where the run's record is written, leak or not."""
    for _ in range(limits.warmup):
        fn(**args)
    gc.collect()
    n = limits.repetitions
    run = Run(
        TrackOptions(
            sample_interval_s=0.0,  # a sample at every repetition
            tracemalloc="off",
            detect=REPETITION_DETECT,
            extra_config={
                "optimizer_hook": False,  # a step is a repetition, whatever the test steps
                "census_first_step": 1,
                "census_steps": census_steps(n),
                "container_poll_s": 0.0,  # growing containers' lengths every repetition
            },
        )
    )
    fixtures = _fixture_root(args)
    try:
        with run:
            for _ in range(n):
                fn(**args)
                run.step()
    finally:
        if fixtures is not None and sys.modules.get(FIXTURE_MODULE) is fixtures:
            del sys.modules[FIXTURE_MODULE]
        del fixtures
    if run.record is None:
        return f"memprobe could not judge this test: {run.analysis_error}"
    if save is not None:
        try:
            run.save(save)
        except OSError as e:  # the verdict stands; only its record is lost
            warnings.warn(
                pytest.PytestWarning(f"memprobe could not save {save}: {e}"), stacklevel=2
            )
    return failure_message(run.findings, limits)


def record_name(nodeid: str) -> str:
    """A file name for a test's record: its node id with what a path cannot hold replaced
    (``tests/test_x.py::test_y[a-1]`` -> ``tests_test_x.py__test_y_a-1_.json``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid.replace("::", "__"))[-200:] + ".json"


def census_steps(n: int) -> List[int]:
    """The census after repetition 1 is the baseline; the one at 5 names what grew (a type
    must gain four objects, a container one item) and the one at 6 starts following it at
    every repetition (live counts, container lengths); the last gives the final counts."""
    return sorted({5, 6, n})


def _fixture_root(args: Dict[str, Any]) -> Optional[types.ModuleType]:
    """A module named ``fixture`` whose globals are the test's fixture values while it runs:
    the holder search starts from modules, so a fixture's list is named ``fixture.db.rows``.
    Not when a real module of that name is imported."""
    if not args or FIXTURE_MODULE in sys.modules:
        return None
    mod = types.ModuleType(FIXTURE_MODULE, "the values of the fixtures of the test memprobe runs")
    mod.__file__ = "<pytest fixtures>"  # not a library path: the search walks it
    mod.__dict__.update(args)
    sys.modules[FIXTURE_MODULE] = mod
    return mod


def failure_message(findings: Sequence[Finding], limits: Limits) -> Optional[str]:
    """What grows past the limits, with the culprit and its holder; None if nothing does."""
    over = [f for f in findings if f.verdict == "leak" and _over(f, limits)]
    if not over:
        return None
    lines = [
        f"memprobe: memory grows with every repetition of this test "
        f"({limits.repetitions} repetitions after {limits.warmup} warm-up; "
        "a step below is one repetition)"
    ]
    for f in over[:3]:
        c: Dict[str, Any] = dict(f.culprit or {})
        rate = _rate(f)
        if c.get("holder") or c.get("type"):
            held = f" held by {c['holder']}" if c.get("holder") else ""
            lines.append(f"  culprit: {c.get('type') or 'memory'}{held} ({f.signal} {rate})")
        else:
            lines.append(f"  growing: {f.signal} {rate}")
        if f.explanation:
            lines.append(f"    {f.explanation}")
        if f.fix_hint:
            lines.append(f"    fix: {f.fix_hint}")
    if len(over) > 3:
        lines.append(f"  ... and {len(over) - 3} more growing signal(s)")
    lines.append(
        f"  limits: {_fmt(limits.max_bytes_per_repetition)} B and "
        f"{_limit(limits.max_objects_per_repetition)} objects per repetition "
        "(@pytest.mark.memprobe(max_bytes_per_repetition=..., max_objects_per_repetition=...))"
    )
    return "\n".join(lines)


def _over(f: Finding, limits: Limits) -> bool:
    slope = f.slope_per_step
    if slope is None:
        return True  # a leak without a per-step slope (a time axis): nothing to compare
    if f.unit in _BYTE_UNITS:
        return slope > limits.max_bytes_per_repetition
    if slope > limits.max_objects_per_repetition:
        return True
    # a count within its allowance: the bytes its holder keeps per repetition still count
    per_rep = _bytes_per_repetition(f)
    return per_rep is not None and per_rep > limits.max_bytes_per_repetition


def _bytes_per_repetition(f: Finding) -> Optional[float]:
    """What a growing container keeps per repetition: its items' bytes over its length,
    times the items it gains per repetition (None when the census did not size it)."""
    held = f.evidence.get("container_bytes")
    length = f.evidence.get("container_len")
    per = f.evidence.get("per_step", f.slope_per_step)
    if not all(isinstance(v, (int, float)) for v in (held, length, per)) or not length:
        return None
    return float(held) / float(length) * float(per)  # type: ignore[arg-type]


def _rate(f: Finding) -> str:
    if f.slope_per_step is None:
        return "grows"
    unit = " B" if f.unit in _BYTE_UNITS else ""
    return f"+{_fmt(f.slope_per_step)}{unit}/repetition"


def _limit(x: float) -> str:
    return "any number of" if x == float("inf") else _fmt(x)


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 10 or x == int(x) else f"{x:,.2f}"
