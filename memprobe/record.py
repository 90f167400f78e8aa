"""The run record (``run.json``): the contract between ``run``, ``report`` and ``diff``.

Schema changelog (bump SCHEMA_VERSION and keep a golden file per version in
tests/data/):

- ``memprobe.run/1``: first version. Later additions, optional, read with defaults:
  ``marks`` (``memprobe.mark`` labels on the timeline).

Fields added later must be read with defaults so older files keep loading.
Nothing in a record is ever executed or unpickled: it is plain JSON.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, TypedDict, Union, cast

SCHEMA_NAME = "memprobe.run"
SCHEMA_VERSION = 1
SCHEMA = f"{SCHEMA_NAME}/{SCHEMA_VERSION}"

MAX_RECORD_BYTES = 512 * 1024 * 1024  # refuse to parse anything larger

VERDICTS = ("leak", "no_leak", "inconclusive")


class RecordError(Exception):
    """A file that is not a usable memprobe run record; the message says why."""


class Culprit(TypedDict):
    """Who a leak finding is blamed on (``Finding.culprit``)."""

    type: Optional[str]
    holder: Optional[str]
    location: Optional[str]
    holds_autograd_graph: bool


class Projection(TypedDict, total=False):
    """When a leak reaches its memory limit at this rate (``Finding.projected_oom``)."""

    step: Optional[int]
    t_s: Optional[float]
    limit_bytes: float


JSONValue = Union[None, bool, int, float, str, List[Any], Dict[str, Any]]


class Evidence(TypedDict, total=False):
    """Why a finding says what it says (``Finding.evidence``): the fit's figures, and the
    census' when a culprit is named. Every key is optional; readers show what is there."""

    # the fit (analysis/findings.evidence)
    axis: str
    n: int
    window: List[Optional[float]]
    warmup_end_x: Optional[float]
    ci: List[Optional[float]]
    p_value: Optional[float]
    autocorrelation_inflation: Optional[float]
    growth: Optional[float]
    sawtooth_floor: bool
    reason: str
    t_end: Optional[float]
    last_value: Optional[float]
    related_signals: List[str]
    allocated: Dict[str, JSONValue]  # a fragmentation finding: the allocated signal's fit
    # the census (analysis/culprit)
    pattern: str
    growing_type: str
    per_step: float
    chain: List[str]
    container_len: int
    container_type: str
    container_bytes: float
    watch: str  # the name memprobe.watch() was given
    bytes_per_step: float
    graph_nodes: int
    graph_roots: float
    graph_nodes_per_root: float
    allocated_at: List[str]
    censuses: int
    culprit_sentence: str
    signal_sentence: str
    signals: Dict[str, str]  # a grouped finding: each signal's rate in words


class SignalSummary(TypedDict, total=False):
    """One signal's verdict as the record keeps it (``RunRecord.signals[pid][signal]``),
    written by ``SignalVerdict.summary()``; older records may lack any key."""

    verdict: Optional[str]
    slope_per_step: Optional[float]
    slope_per_s: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]
    confidence: float
    warmup_end_x: Optional[float]
    n: int
    unit: str
    axis: str
    family: str
    x0: Optional[float]
    x_end: Optional[float]
    intercept: Optional[float]
    reason: str
    needed: Optional[str]
    floor: bool
    plateau: bool


#: ``{"<pid>": {"<signal>": SignalSummary}}``
Signals = Dict[str, Dict[str, SignalSummary]]


class CensusEntry(TypedDict, total=False):
    """One census of one process (``Process.census``), as the agent wrote it: the agent
    runs inside the target, so every field is checked where it is read
    (``analysis/census.py``)."""

    step: Optional[int]
    t: float
    seq: int
    types: Dict[str, JSONValue]
    containers: List[JSONValue]
    graphs: Dict[str, JSONValue]
    tensors: Dict[str, JSONValue]
    modules: Dict[str, JSONValue]
    ndarray: Dict[str, JSONValue]
    growing_types: List[JSONValue]
    tracemalloc: Dict[str, JSONValue]
    objects_total: int
    truncated: bool
    duration_s: float
    budget: Dict[str, JSONValue]
    timings: Dict[str, JSONValue]
    stride: int


@dataclass(frozen=True)
class Series:
    step: List[Optional[int]]
    t: List[float]
    value: List[float]

    def to_json(self) -> Dict[str, Any]:
        return {"step": list(self.step), "t": list(self.t), "value": list(self.value)}

    @staticmethod
    def from_json(d: Any) -> Series:
        _require(isinstance(d, dict), "a series is not an object")
        step, t, value = d.get("step", []), d.get("t", []), d.get("value", [])
        _require(
            isinstance(step, list) and isinstance(t, list) and isinstance(value, list),
            "series fields must be lists",
        )
        _require(len(t) == len(value) == len(step), "series lists have different lengths")
        _require(
            all(_is_num(x) for x in t) and all(_is_num(x) for x in value),
            "series times and values must be numbers",
        )
        _require(all(x is None or _is_int(x) for x in step), "series steps must be integers")
        return Series(step=step, t=t, value=value)


@dataclass(frozen=True)
class ExitInfo:
    code: Optional[int] = None
    signal: Optional[int] = None
    # True / False where the cgroup's oom_kill counter was readable, None = unknown
    oom_killed: Optional[bool] = None


@dataclass(frozen=True)
class Limits:
    ram_bytes: Optional[int] = None
    ram_source: str = "unknown"  # "cgroup" | "machine" | "unknown"
    gpu_bytes: List[int] = field(default_factory=list)


@dataclass(frozen=True)
class Process:
    pid: int
    parent_pid: Optional[int] = None
    role: str = "main"
    rank: Optional[int] = None  # global rank; a worker's or child's is its rank's
    worker_id: Optional[int] = None
    argv: List[str] = field(default_factory=list)
    python: Optional[str] = None
    started_at: Optional[float] = None  # wall clock of the process' t=0
    ended: Optional[str] = None  # "exit" (agent wrote its exit line) | "vanished" | None
    has_agent: bool = True
    steps: int = 0
    series: Dict[str, Series] = field(default_factory=dict)
    census: List[CensusEntry] = field(default_factory=list)
    local_rank: Optional[int] = None
    node: Optional[int] = None  # torchrun GROUP_RANK on multi-node jobs, or set by a merge
    name: Optional[str] = None  # multiprocessing name ("ForkPoolWorker-2") or program name

    def to_json(self) -> Dict[str, Any]:
        d = asdict(self)
        d["series"] = {k: v.to_json() for k, v in self.series.items()}
        return d

    @staticmethod
    def from_json(d: Any) -> Process:
        _require(isinstance(d, dict), "a process entry is not an object")
        _require(_is_int(d.get("pid")), "a process entry has no integer pid")
        series_raw = d.get("series", {})
        _require(isinstance(series_raw, dict), "process series is not an object")
        census = d.get("census", [])
        _require(isinstance(census, list), "process census is not a list")
        return Process(
            pid=d["pid"],
            parent_pid=_opt_int(d.get("parent_pid")),
            role=str(d.get("role", "main")),
            rank=_opt_int(d.get("rank")),
            worker_id=_opt_int(d.get("worker_id")),
            argv=_str_list(d.get("argv")),
            python=_opt_str(d.get("python")),
            started_at=_opt_float(d.get("started_at")),
            ended=_opt_str(d.get("ended")),
            has_agent=bool(d.get("has_agent", True)),
            steps=_opt_int(d.get("steps")) or 0,
            series={str(k): Series.from_json(v) for k, v in series_raw.items()},
            census=[cast(CensusEntry, c) for c in census if isinstance(c, dict)],
            local_rank=_opt_int(d.get("local_rank")),
            node=_opt_int(d.get("node")),
            name=_opt_str(d.get("name")),
        )

    @property
    def label(self) -> str:
        """ "rank 1", "rank 1 worker 0", "node 2 rank 5", "worker 3", "main", "child"."""
        node = f"node {self.node} " if self.node is not None else ""
        if self.role == "rank" and self.rank is not None:
            return f"{node}rank {self.rank}"
        owner = f"{node}rank {self.rank} " if self.rank is not None else node
        if self.role == "worker" and self.worker_id is not None:
            return f"{owner}worker {self.worker_id}"
        if self.role == "child" and self.name:
            return f"{owner}child {self.name}"
        return f"{owner}{self.role}"


@dataclass(frozen=True)
class Event:
    t: float
    pid: Optional[int]
    kind: str
    message: str


@dataclass(frozen=True)
class Mark:
    """``memprobe.mark(label)``: an event on the run's timeline, at a step where there is one."""

    t: float  # seconds since the run started
    pid: Optional[int]
    step: Optional[int]
    label: str

    @staticmethod
    def from_json(d: Any) -> Optional[Mark]:
        if not isinstance(d, dict) or not _is_num(d.get("t")):
            return None
        return Mark(
            t=float(d["t"]),
            pid=_opt_int(d.get("pid")),
            step=_opt_int(d.get("step")),
            label=str(d.get("label", "")),
        )


@dataclass(frozen=True)
class Finding:
    signal: str
    pid: Optional[int]
    verdict: str
    slope_per_step: Optional[float] = None
    slope_per_s: Optional[float] = None
    unit: str = "bytes"
    confidence: float = 0.0
    projected_oom: Optional[Projection] = None
    culprit: Optional[Culprit] = None
    explanation: str = ""
    fix_hint: Optional[str] = None
    evidence: Evidence = field(default_factory=lambda: Evidence())
    kind: str = "leak"  # "leak" | "fragmentation" | ... (what the finding says)
    # every signal that grows with this culprit, the leading one (``signal``) first
    signals: List[str] = field(default_factory=list)
    # what the culprit holds now, and when the projected limit is reached (bytes)
    retained_bytes: Optional[float] = None
    retained_bytes_at_oom: Optional[float] = None

    @property
    def holder(self) -> Optional[str]:
        """The culprit's holder path, if one is named."""
        return self.culprit.get("holder") if self.culprit else None

    @property
    def culprit_type(self) -> Optional[str]:
        """The culprit's type, if one is named."""
        return self.culprit.get("type") if self.culprit else None

    @staticmethod
    def from_json(d: Any) -> Finding:
        _require(isinstance(d, dict), "a finding is not an object")
        _require(isinstance(d.get("signal"), str), "a finding has no signal name")
        return Finding(
            signal=d["signal"],
            pid=_opt_int(d.get("pid")),
            verdict=str(d.get("verdict", "inconclusive")),
            slope_per_step=_opt_float(d.get("slope_per_step")),
            slope_per_s=_opt_float(d.get("slope_per_s")),
            unit=str(d.get("unit", "bytes")),
            confidence=_opt_float(d.get("confidence")) or 0.0,
            projected_oom=_projection(d.get("projected_oom")),
            culprit=_culprit(d.get("culprit")),
            explanation=str(d.get("explanation", "")),
            fix_hint=_opt_str(d.get("fix_hint")),
            evidence=cast(Evidence, d["evidence"]) if isinstance(d.get("evidence"), dict) else {},
            kind=str(d.get("kind", "leak")),
            signals=[x for x in _str_list(d.get("signals")) if x],
            retained_bytes=_opt_float(d.get("retained_bytes")),
            retained_bytes_at_oom=_opt_float(d.get("retained_bytes_at_oom")),
        )


@dataclass(frozen=True)
class RunRecord:
    command: List[str]
    cwd: str
    started_at: float
    duration_s: float
    exit: ExitInfo
    limits: Limits
    x_axis: str
    processes: List[Process]
    events: List[Event] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    verdict: str = "inconclusive"
    memprobe_version: str = ""
    schema: str = SCHEMA
    # per-signal analysis summaries for reports and the diff
    signals: Signals = field(default_factory=dict)
    marks: List[Mark] = field(default_factory=list)

    def to_json(self) -> Dict[str, Any]:
        return {
            "schema": self.schema,
            "memprobe_version": self.memprobe_version,
            "command": self.command,
            "cwd": self.cwd,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
            "exit": asdict(self.exit),
            "limits": asdict(self.limits),
            "x_axis": self.x_axis,
            "processes": [p.to_json() for p in self.processes],
            "events": [asdict(e) for e in self.events],
            "findings": [asdict(f) for f in self.findings],
            "verdict": self.verdict,
            "signals": self.signals,
            "marks": [asdict(m) for m in self.marks],
        }

    @staticmethod
    def from_json(d: Any) -> RunRecord:
        """The record in ``d``, or RecordError (one line) for anything that is not one."""
        try:
            return RunRecord._from_json(d)
        except RecordError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as e:
            first = (str(e).splitlines() or [""])[0][:200]
            raise RecordError(f"malformed run record ({type(e).__name__}: {first})") from None

    @staticmethod
    def _from_json(d: Any) -> RunRecord:
        _require(isinstance(d, dict), "the top level is not a JSON object")
        schema = d.get("schema")
        _require(isinstance(schema, str), "no 'schema' field: not a memprobe run record")
        name, _, version = schema.partition("/")
        _require(name == SCHEMA_NAME, f"schema {schema!r} is not a memprobe run record")
        _require(version.isdigit(), f"schema {schema!r} has no integer version")
        if int(version) > SCHEMA_VERSION:
            raise RecordError(
                f"schema {schema!r} is newer than this memprobe reads ({SCHEMA}); upgrade memprobe"
            )
        procs = d.get("processes")
        _require(isinstance(procs, list), "no 'processes' list")
        exit_raw = d.get("exit") or {}
        limits_raw = d.get("limits") or {}
        _require(isinstance(exit_raw, dict) and isinstance(limits_raw, dict), "bad exit/limits")
        for key in ("command", "events", "findings"):
            _require(isinstance(d.get(key, []), list), f"{key!r} is not a list")
        for key in ("started_at", "duration_s"):
            _require(_is_num(d.get(key, 0.0)), f"{key!r} is not a number")
        oom = exit_raw.get("oom_killed")
        gpu = limits_raw.get("gpu_bytes") or []
        return RunRecord(
            schema=schema,
            memprobe_version=str(d.get("memprobe_version", "")),
            command=_str_list(d.get("command")),
            cwd=str(d.get("cwd", "")),
            started_at=_opt_float(d.get("started_at")) or 0.0,
            duration_s=_opt_float(d.get("duration_s")) or 0.0,
            exit=ExitInfo(
                code=_opt_int(exit_raw.get("code")),
                signal=_opt_int(exit_raw.get("signal")),
                oom_killed=oom if isinstance(oom, bool) else None,
            ),
            limits=Limits(
                ram_bytes=_opt_int(limits_raw.get("ram_bytes")),
                ram_source=str(limits_raw.get("ram_source", "unknown")),
                gpu_bytes=[g for g in (_opt_int(x) for x in _list(gpu)) if g is not None],
            ),
            x_axis=str(d.get("x_axis", "time")),
            processes=[Process.from_json(p) for p in procs],
            events=[
                Event(
                    t=_opt_float(e.get("t")) or 0.0,
                    pid=_opt_int(e.get("pid")),
                    kind=str(e.get("kind", "")),
                    message=str(e.get("message", "")),
                )
                for e in _list(d.get("events"))
                if isinstance(e, dict)
            ],
            findings=[Finding.from_json(f) for f in _list(d.get("findings"))],
            verdict=str(d.get("verdict", "inconclusive")),
            signals=_signals(d.get("signals")),
            marks=[m for m in (Mark.from_json(x) for x in _list(d.get("marks"))) if m is not None],
        )


def _culprit(v: Any) -> Optional[Culprit]:
    if not isinstance(v, dict):
        return None
    if set(v) != set(Culprit.__annotations__):
        # kept as written (a hand-made or future record): readers .get() every key
        return cast(Culprit, v)
    return Culprit(
        type=_opt_str(v["type"]),
        holder=_opt_str(v["holder"]),
        location=_opt_str(v["location"]),
        holds_autograd_graph=v["holds_autograd_graph"] is True,
    )


def _projection(v: Any) -> Optional[Projection]:
    return cast(Projection, v) if isinstance(v, dict) else None


def _signals(v: Any) -> Signals:
    """Summaries as written; what is not an object is left out (readers check each value:
    ``analysis/compare_fits``)."""
    if not isinstance(v, dict):
        return {}
    return {
        str(pid): {str(k): cast(SignalSummary, x) for k, x in by.items() if isinstance(x, dict)}
        for pid, by in v.items()
        if isinstance(by, dict)
    }


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise RecordError(message)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _opt_int(v: Any) -> Optional[int]:
    if _is_int(v):
        return int(v)
    return int(v) if isinstance(v, float) and math.isfinite(v) else None


def _opt_float(v: Any) -> Optional[float]:
    """A number as float; anything else (text, lists, ints too big for a float) as None."""
    if not _is_num(v):
        return None
    try:
        return float(v)
    except OverflowError:
        return None


def _list(v: Any) -> List[Any]:
    return v if isinstance(v, list) else []


def _str_list(v: Any) -> List[str]:
    return [str(a) for a in _list(v)]


def _opt_str(v: Any) -> Optional[str]:
    return None if v is None else str(v)


def load(path: str) -> RunRecord:
    """Load a run record; raise RecordError with a one-line reason on any problem."""
    if os.path.isdir(path):
        raise RecordError(f"{path} is a directory; pass a run.json (or use report on a run folder)")
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise RecordError(f"cannot read {path}: {e.strerror or e}") from None
    if size == 0:
        raise RecordError(f"{path} is empty")
    if size > MAX_RECORD_BYTES:
        raise RecordError(
            f"{path} is {size / 2**20:.0f} MiB, larger than any run record memprobe writes"
        )
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except UnicodeDecodeError:
        raise RecordError(f"{path} is not UTF-8 text: not a run record") from None
    except json.JSONDecodeError as e:
        raise RecordError(
            f"{path} is not valid JSON (truncated?): {e.msg} at line {e.lineno}"
        ) from None
    except OSError as e:
        raise RecordError(f"cannot read {path}: {e.strerror or e}") from None
    except RecursionError:
        raise RecordError(f"{path} nests too deeply: not a run record") from None
    try:
        return RunRecord.from_json(data)
    except RecordError as e:
        raise RecordError(f"{path}: {e}") from None
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        raise RecordError(f"{path}: malformed run record ({type(e).__name__}: {e})") from None


def save(record: RunRecord, path: str) -> None:
    """Write atomically (temp file + rename) with mode 0600: never a half-written run.json."""
    directory = os.path.dirname(os.path.abspath(path))
    data = record.to_json()
    try:
        text = json.dumps(data, separators=(",", ":"), allow_nan=False, default=_nan)
    except ValueError:  # a NaN/inf from analysis must not cost the run: write it as null
        text = json.dumps(_finite(data), separators=(",", ":"), allow_nan=False, default=_nan)
    fd, tmp = tempfile.mkstemp(prefix=".memprobe-", suffix=".json.tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _nan(o: Any) -> Any:
    return str(o)


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def schema_path() -> str:
    return os.path.join(os.path.dirname(__file__), "schema", "run-1.schema.json")
