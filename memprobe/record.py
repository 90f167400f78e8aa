"""The run record (``run.json``): the contract between ``run``, ``report`` and ``diff``.

Schema changelog (bump SCHEMA_VERSION and keep a golden file per version in
tests/data/):

- ``memprobe.run/1``: first version.

Fields added later must be read with defaults so older files keep loading.
Nothing in a record is ever executed or unpickled: it is plain JSON.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

SCHEMA_NAME = "memprobe.run"
SCHEMA_VERSION = 1
SCHEMA = f"{SCHEMA_NAME}/{SCHEMA_VERSION}"

MAX_RECORD_BYTES = 512 * 1024 * 1024  # refuse to parse anything larger

VERDICTS = ("leak", "no_leak", "inconclusive")


class RecordError(Exception):
    """A file that is not a usable memprobe run record; the message says why."""


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
    census: List[Dict[str, Any]] = field(default_factory=list)
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
        _require(isinstance(d.get("pid"), int), "a process entry has no integer pid")
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
            argv=[str(a) for a in d.get("argv", []) or []],
            python=_opt_str(d.get("python")),
            started_at=d.get("started_at"),
            ended=_opt_str(d.get("ended")),
            has_agent=bool(d.get("has_agent", True)),
            steps=int(d.get("steps", 0) or 0),
            series={str(k): Series.from_json(v) for k, v in series_raw.items()},
            census=[c for c in census if isinstance(c, dict)],
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
        return f"{owner}{self.role}"


@dataclass(frozen=True)
class Event:
    t: float
    pid: Optional[int]
    kind: str
    message: str


@dataclass(frozen=True)
class Finding:
    signal: str
    pid: Optional[int]
    verdict: str
    slope_per_step: Optional[float] = None
    slope_per_s: Optional[float] = None
    unit: str = "bytes"
    confidence: float = 0.0
    projected_oom: Optional[Dict[str, Any]] = None  # {step, t_s, limit_bytes}
    culprit: Optional[Dict[str, Any]] = None  # {type, holder, location, holds_autograd_graph}
    explanation: str = ""
    fix_hint: Optional[str] = None
    evidence: Dict[str, Any] = field(default_factory=dict)
    kind: str = "leak"  # "leak" | "fragmentation" | ... (what the finding says)

    @staticmethod
    def from_json(d: Any) -> Finding:
        _require(isinstance(d, dict), "a finding is not an object")
        _require(isinstance(d.get("signal"), str), "a finding has no signal name")
        return Finding(
            signal=d["signal"],
            pid=_opt_int(d.get("pid")),
            verdict=str(d.get("verdict", "inconclusive")),
            slope_per_step=d.get("slope_per_step"),
            slope_per_s=d.get("slope_per_s"),
            unit=str(d.get("unit", "bytes")),
            confidence=float(d.get("confidence", 0.0) or 0.0),
            projected_oom=d.get("projected_oom")
            if isinstance(d.get("projected_oom"), dict)
            else None,
            culprit=d.get("culprit") if isinstance(d.get("culprit"), dict) else None,
            explanation=str(d.get("explanation", "")),
            fix_hint=_opt_str(d.get("fix_hint")),
            evidence=d.get("evidence") if isinstance(d.get("evidence"), dict) else {},
            kind=str(d.get("kind", "leak")),
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
    # per-signal analysis summaries for reports: {"<pid>": {"<signal>": {...}}}
    signals: Dict[str, Any] = field(default_factory=dict)

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
        }

    @staticmethod
    def from_json(d: Any) -> RunRecord:
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
        oom = exit_raw.get("oom_killed")
        gpu = limits_raw.get("gpu_bytes") or []
        return RunRecord(
            schema=schema,
            memprobe_version=str(d.get("memprobe_version", "")),
            command=[str(a) for a in d.get("command", []) or []],
            cwd=str(d.get("cwd", "")),
            started_at=float(d.get("started_at", 0.0) or 0.0),
            duration_s=float(d.get("duration_s", 0.0) or 0.0),
            exit=ExitInfo(
                code=_opt_int(exit_raw.get("code")),
                signal=_opt_int(exit_raw.get("signal")),
                oom_killed=oom if isinstance(oom, bool) else None,
            ),
            limits=Limits(
                ram_bytes=_opt_int(limits_raw.get("ram_bytes")),
                ram_source=str(limits_raw.get("ram_source", "unknown")),
                gpu_bytes=[int(g) for g in gpu if isinstance(g, (int, float))],
            ),
            x_axis=str(d.get("x_axis", "time")),
            processes=[Process.from_json(p) for p in procs],
            events=[
                Event(
                    t=float(e.get("t", 0.0) or 0.0),
                    pid=_opt_int(e.get("pid")),
                    kind=str(e.get("kind", "")),
                    message=str(e.get("message", "")),
                )
                for e in d.get("events", []) or []
                if isinstance(e, dict)
            ],
            findings=[Finding.from_json(f) for f in d.get("findings", []) or []],
            verdict=str(d.get("verdict", "inconclusive")),
            signals=d.get("signals") if isinstance(d.get("signals"), dict) else {},
        )


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise RecordError(message)


def _opt_int(v: Any) -> Optional[int]:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


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
    fd, tmp = tempfile.mkstemp(prefix=".memprobe-", suffix=".json.tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record.to_json(), f, separators=(",", ":"), allow_nan=False, default=_nan)
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


def schema_path() -> str:
    return os.path.join(os.path.dirname(__file__), "schema", "run-1.schema.json")
