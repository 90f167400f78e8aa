"""Property tests: the record loader and the JSON-lines reader never fail in an unplanned way.

- ``RunRecord.from_json`` / ``record.load``: any input either raises ``RecordError`` (one line)
  or gives a record whose every field has its declared type, so renderers can trust it.
- ``wire.decode_lines`` / ``wire.read_file`` / ``Tailer``: garbage lines, torn and partial
  last lines and arbitrary chunking lose nothing but the damaged lines, and never raise.
- ``rebuild.rebuild``: a run folder with arbitrary (even hostile) lines rebuilds or says why.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from memprobe import record as rec
from memprobe.bootstrap.memprobe_agent import wire
from memprobe.collect.journal import PARENT_FILE
from memprobe.collect.rebuild import rebuild
from memprobe.launch.tail import Tailer
from memprobe.record.files import _finite

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

json_scalars = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=12,
)


def _base_record() -> Dict[str, Any]:
    from recordgen import make_record

    data: Dict[str, Any] = json.loads(
        json.dumps(make_record(steps=12, warmup=2, leak_bytes_per_step=1e6).to_json())
    )
    return data


BASE = _base_record()


# -- a loaded record is well typed ---------------------------------------------------------


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _opt(check: Any) -> Any:
    return lambda v: v is None or check(v)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _list_of(check: Any) -> Any:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _well_typed(r: rec.RunRecord) -> None:
    """Every field has the type its dataclass declares (what the renderers rely on)."""

    def need(ok: bool, what: str) -> None:
        assert ok, what

    need(_list_of(_str)(r.command), "command")
    for name in ("cwd", "x_axis", "verdict", "memprobe_version", "schema"):
        need(_str(getattr(r, name)), name)
    need(_num(r.started_at) and _num(r.duration_s), "times")
    need(_opt(_int)(r.exit.code) and _opt(_int)(r.exit.signal), "exit")
    need(r.exit.oom_killed in (None, True, False), "oom_killed")
    need(_opt(_int)(r.limits.ram_bytes) and _str(r.limits.ram_source), "limits")
    need(_list_of(_int)(r.limits.gpu_bytes), "gpu_bytes")
    need(isinstance(r.signals, dict), "signals")
    for p in r.processes:
        need(_int(p.pid) and _int(p.steps) and isinstance(p.has_agent, bool), "process ints")
        for name in ("parent_pid", "rank", "worker_id", "local_rank", "node"):
            need(_opt(_int)(getattr(p, name, None)), f"process {name}")
        for name in ("python", "ended", "name"):
            need(_opt(_str)(getattr(p, name, None)), f"process {name}")
        need(_opt(_num)(p.started_at), "process started_at")
        need(_list_of(_str)(p.argv) and _str(p.role), "process argv/role")
        need(_list_of(lambda c: isinstance(c, dict))(p.census), "census")
        for key, s in p.series.items():
            need(_str(key), "series name")
            need(
                _list_of(_opt(_int))(s.step) and _list_of(_num)(s.t) and _list_of(_num)(s.value),
                f"series {key}",
            )
            need(len(s.step) == len(s.t) == len(s.value), "series lengths")
    for e in r.events:
        need(_num(e.t) and _opt(_int)(e.pid) and _str(e.kind) and _str(e.message), "event")
    for f in r.findings:
        need(_str(f.signal) and _str(f.verdict) and _str(f.unit) and _str(f.kind), "finding strs")
        need(_opt(_int)(f.pid) and _num(f.confidence), "finding pid/confidence")
        need(_opt(_num)(f.slope_per_step) and _opt(_num)(f.slope_per_s), "finding slopes")
        need(_str(f.explanation) and _opt(_str)(f.fix_hint), "finding texts")
        for name in ("projected_oom", "culprit"):
            need(_opt(lambda v: isinstance(v, dict))(getattr(f, name)), f"finding {name}")
        need(isinstance(f.evidence, dict), "finding evidence")


def _load_or_refuse(data: Any) -> Optional[rec.RunRecord]:
    try:
        r = rec.RunRecord.from_json(data)
    except rec.RecordError as e:
        assert str(e) and "\n" not in str(e)
        return None
    _well_typed(r)
    return r


@st.composite
def mutated_records(draw: st.DrawFn) -> Any:
    """The base record with one value somewhere replaced by arbitrary JSON (or removed)."""
    data = json.loads(json.dumps(BASE))
    node: Any = data
    while True:
        keys = list(node.keys()) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            return data
        key = draw(st.sampled_from(keys))
        child = node[key]
        if isinstance(child, (dict, list)) and child and draw(st.booleans()):
            node = child
            continue
        if isinstance(node, dict) and draw(st.integers(0, 5)) == 0:
            del node[key]
        else:
            node[key] = draw(json_values)
        return data


@SETTINGS
@given(mutated_records())
def test_from_json_refuses_or_gives_a_well_typed_record(data: Any) -> None:
    r = _load_or_refuse(data)
    if r is not None:  # what loads also saves and loads back the same
        again = rec.RunRecord.from_json(json.loads(json.dumps(r.to_json())))
        assert json.dumps(again.to_json(), sort_keys=True) == json.dumps(
            r.to_json(), sort_keys=True
        )


@SETTINGS
@given(json_values)
def test_from_json_on_any_json_value(data: Any) -> None:
    _load_or_refuse(data)


@SETTINGS
@given(st.binary(max_size=300) | mutated_records().map(lambda d: json.dumps(d).encode()))
@example(b"[" * 100_000)
@example(b'{"schema": "memprobe.run/1", "processes": [], "duration_s": NaN}')
@example(json.dumps(BASE).encode()[:-7])
def test_load_any_bytes(blob: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "run.json")
        with open(path, "wb") as f:
            f.write(blob)
        try:
            r = rec.load(path)
        except rec.RecordError as e:
            assert "\n" not in str(e)
            return
        _well_typed(r)


def test_golden_roundtrip_of_a_generated_record(tmp_path: Path) -> None:
    from recordgen import make_record

    r = make_record(steps=30, leak_bytes_per_step=5e5, hostile=True)
    path = tmp_path / "r.json"
    rec.save(r, str(path))
    assert rec.load(str(path)) == r


SUMMARY_KEYS = [f.name for f in dataclasses.fields(rec.SignalSummary)]


@SETTINGS
@given(json_values | st.dictionaries(st.sampled_from(SUMMARY_KEYS), json_values))
def test_signal_summary_reads_anything_and_writes_what_it_reads(d: Any) -> None:
    # GIVEN any JSON value where a signal's summary belongs (old, partial, mistyped)
    s = rec.SignalSummary.from_json(d)
    # THEN it reads with defaults for what it cannot use, writes every key in field
    # order, as plain JSON, and reads back the same
    out = s.to_json()
    assert list(out) == SUMMARY_KEYS
    assert rec.SignalSummary.from_json(json.loads(json.dumps(out, allow_nan=False))) == s
    assert s.verdict is None or isinstance(s.verdict, str)
    assert isinstance(s.n, int) and isinstance(s.floor, bool) and s.per in ("step", "s")


def test_signal_summary_reads_the_defaults_of_older_records() -> None:
    # GIVEN a summary written before summaries named their axis, family, end and flags
    old = {"verdict": "leak", "slope_per_step": 2.0, "slope_per_s": 40.0, "n": 12, "x0": 3}
    # WHEN read on a record whose x-axis is time
    s = rec.SignalSummary.from_json(old, axis="time")
    # THEN the record's axis stands in for the summary's, the rest reads as its default
    assert s.axis == "time" and s.per == "s" and s.slope == 40.0
    assert s.x0 == 3.0 and s.family == "" and s.needed is None and not s.plateau
    assert rec.SignalSummary.from_json(dict(old, axis="step"), axis="time").slope == 2.0
    bad = {"verdict": 3, "confidence": float("nan"), "n": "x", "ci_low": float("inf")}
    assert rec.SignalSummary.from_json(bad) == rec.SignalSummary()


# -- the JSON-lines reader ------------------------------------------------------------------

messages = st.fixed_dictionaries(
    {"k": st.sampled_from([wire.K_SAMPLE, wire.K_EVENT, wire.K_CENSUS, "future_kind"])},
    optional={
        "t": st.floats(allow_nan=False, allow_infinity=False),
        "step": st.integers(0, 10**9),
        "v": st.dictionaries(
            st.text(max_size=10), st.integers() | st.floats(allow_nan=False, allow_infinity=False)
        ),
        "message": st.text(max_size=30),
    },
)
garbage = st.one_of(
    st.binary(max_size=40).filter(lambda b: b"\n" not in b),
    st.sampled_from(
        [
            b"[1, 2]",
            b'"k"',
            b"null",
            b'{"k": 3}',
            b'{"no_k": "x"}',
            b"{",
            b"\xff\xfe",
            b"[" * 1500,
            b'{"k": "sample", "t": ' + b"[" * 1500,
        ]
    ),
)


def _is_garbage(raw: bytes) -> bool:
    if not raw.strip():
        return False
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return True
    return not (isinstance(obj, dict) and isinstance(obj.get("k"), str))


@SETTINGS
@given(
    st.lists(
        st.one_of(messages.map(lambda m: ("msg", m)), garbage.map(lambda g: ("bad", g))),
        max_size=30,
    )
)
def test_decode_lines_keeps_every_message_and_counts_garbage(items: List[Any]) -> None:
    data = b"".join((wire.encode(x).encode() if kind == "msg" else x + b"\n") for kind, x in items)
    got, tail, bad = wire.decode_lines(data)
    assert tail == b""
    assert got == [json.loads(wire.encode(x)) for kind, x in items if kind == "msg"]
    assert bad == sum(1 for kind, x in items if kind == "bad" and _is_garbage(x))


@SETTINGS
@given(st.lists(messages, min_size=1, max_size=20), st.data())
def test_chunked_reads_equal_one_read(msgs: List[Dict[str, Any]], data: st.DataObject) -> None:
    # GIVEN the bytes of a process file arriving in arbitrary pieces (the tailer's view)
    blob = b"".join(wire.encode(m).encode() for m in msgs)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(blob)), max_size=8)))
    pieces = [blob[a:b] for a, b in zip([0, *cuts], [*cuts, len(blob)])]
    got: List[Dict[str, Any]] = []
    tail = b""
    for piece in pieces:
        out, tail, bad = wire.decode_lines(tail + piece)
        assert bad == 0
        got += out
    assert tail == b"" and got == [json.loads(wire.encode(m)) for m in msgs]


@SETTINGS
@given(st.lists(messages, min_size=1, max_size=10), st.integers(1, 200), st.booleans())
def test_read_file_partial_last_line(
    msgs: List[Dict[str, Any]], cut: int, unterminated: bool
) -> None:
    # GIVEN a file whose writer was killed mid-line (or right before the newline)
    lines = [wire.encode(m).encode() for m in msgs]
    last = lines[-1][:-1] if unterminated else lines[-1][: max(1, min(cut, len(lines[-1]) - 2))]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, wire.proc_file_name(1))
        with open(path, "wb") as f:
            f.write(b"".join(lines[:-1]) + last)
        got, bad = wire.read_file(path)
    expect = [json.loads(x) for x in lines[:-1]]
    # THEN every complete line is kept; the last one too when only its newline is missing
    if unterminated:
        assert got == expect + [json.loads(lines[-1])] and bad == 0
    else:
        assert got == expect and bad <= 1


@SETTINGS
@given(st.lists(messages, min_size=2, max_size=12), st.data())
def test_torn_write_costs_only_its_line(msgs: List[Dict[str, Any]], data: st.DataObject) -> None:
    # GIVEN lines where one write was torn and the next writer's line glued onto it
    lines = [wire.encode(m).encode() for m in msgs]
    i = data.draw(st.integers(0, len(lines) - 2))
    torn = lines[i][: data.draw(st.integers(1, len(lines[i]) - 2))]
    blob = b"".join(lines[:i]) + torn + b"".join(lines[i + 1 :])
    got, tail, bad = wire.decode_lines(blob)
    # THEN only the torn line and the one fused with it are lost
    survivors = [json.loads(x) for j, x in enumerate(lines) if j not in (i, i + 1)]
    assert [m for m in got if m in survivors] == survivors
    assert len(got) >= len(lines) - 2 and bad <= 1


@SETTINGS
@given(st.lists(messages, min_size=1, max_size=15), st.data())
def test_tailer_sees_what_read_file_sees(msgs: List[Dict[str, Any]], data: st.DataObject) -> None:
    blob = b"".join(wire.encode(m).encode() for m in msgs)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(blob)), max_size=6)))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, wire.proc_file_name(42))
        tailer = Tailer(d)
        seen = []
        with open(path, "ab", buffering=0) as f:
            for a, b in zip([0, *cuts], [*cuts, len(blob)]):
                f.write(blob[a:b])
                seen += [m for pid, m in tailer.poll() if pid == 42]
        seen += [m for _, m in tailer.poll() + tailer.flush_partial()]
        assert seen == wire.read_file(path)[0]
        assert tailer.garbage_lines == 0


# -- rebuilding a run folder from hostile lines ---------------------------------------------

wire_kinds = st.sampled_from(
    [
        wire.K_HEADER,
        wire.K_SAMPLE,
        wire.K_CENSUS,
        wire.K_EVENT,
        wire.K_EXIT,
        wire.K_IDENTITY,
        "meta",
        "outside",
    ]
)
hostile_messages = st.builds(
    lambda k, extra: {**extra, "k": k},
    wire_kinds,
    st.dictionaries(
        st.sampled_from(
            [
                "t",
                "step",
                "v",
                "pid",
                "ppid",
                "argv",
                "orig_argv",
                "wall_t0",
                "command",
                "cwd",
                "started_at",
                "limits",
                "code",
                "signal",
                "oom_killed",
                "duration_s",
                "kind",
                "message",
                "worker_id",
                "rank",
                "world_size",
                "steps",
                "forked_from",
                "types",
            ]
        ),
        json_values,
        max_size=6,
    ),
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(hostile_messages, max_size=8),
    st.lists(hostile_messages, max_size=8),
    st.lists(hostile_messages, max_size=4),
)
def test_rebuild_from_hostile_lines(
    proc_a: List[Dict[str, Any]], proc_b: List[Dict[str, Any]], parent: List[Dict[str, Any]]
) -> None:
    with tempfile.TemporaryDirectory() as d:
        for name, msgs in (
            (wire.proc_file_name(11), proc_a),
            (wire.proc_file_name(12), proc_b),
            (PARENT_FILE, parent),
        ):
            with open(os.path.join(d, name), "w") as f:
                f.writelines(wire.safe_encode(m) for m in msgs)
        try:
            r = rebuild(d)
        except rec.RecordError:
            return
    _well_typed(r)
    # and what a rebuild gives is a record that saves and loads
    text = json.dumps(_finite(r.to_json()), allow_nan=False)
    assert rec.RunRecord.from_json(json.loads(text)) is not None
    assume(math.isfinite(r.duration_s))
