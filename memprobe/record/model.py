"""The run record (``run.json``) as frozen dataclasses, each with its ``to_json`` and a
``from_json`` that checks what it reads. Nothing in a record is ever executed or
unpickled: it is plain JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, cast

from memprobe.record.fields import (
    SCHEMA,
    SCHEMA_NAME,
    SCHEMA_VERSION,
    Culprit,
    Evidence,
    Projection,
)
from memprobe.record.process import Process
from memprobe.record.summary import Signals
from memprobe.record.validate import (
    RecordError,
    as_list,
    is_num,
    opt_float,
    opt_int,
    opt_str,
    read_culprit,
    read_projection,
    read_signals,
    require,
    str_list,
)


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
        if not isinstance(d, dict) or not is_num(d.get("t")):
            return None
        return Mark(
            t=float(d["t"]),
            pid=opt_int(d.get("pid")),
            step=opt_int(d.get("step")),
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
        require(isinstance(d, dict), "a finding is not an object")
        require(isinstance(d.get("signal"), str), "a finding has no signal name")
        return Finding(
            signal=d["signal"],
            pid=opt_int(d.get("pid")),
            verdict=str(d.get("verdict", "inconclusive")),
            slope_per_step=opt_float(d.get("slope_per_step")),
            slope_per_s=opt_float(d.get("slope_per_s")),
            unit=str(d.get("unit", "bytes")),
            confidence=opt_float(d.get("confidence")) or 0.0,
            projected_oom=read_projection(d.get("projected_oom")),
            culprit=read_culprit(d.get("culprit")),
            explanation=str(d.get("explanation", "")),
            fix_hint=opt_str(d.get("fix_hint")),
            evidence=cast(Evidence, d["evidence"]) if isinstance(d.get("evidence"), dict) else {},
            kind=str(d.get("kind", "leak")),
            signals=[x for x in str_list(d.get("signals")) if x],
            retained_bytes=opt_float(d.get("retained_bytes")),
            retained_bytes_at_oom=opt_float(d.get("retained_bytes_at_oom")),
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
            "signals": {
                pid: {name: s.to_json() for name, s in by.items()}
                for pid, by in self.signals.items()
            },
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
        require(isinstance(d, dict), "the top level is not a JSON object")
        schema = d.get("schema")
        require(isinstance(schema, str), "no 'schema' field: not a memprobe run record")
        name, _, version = schema.partition("/")
        require(name == SCHEMA_NAME, f"schema {schema!r} is not a memprobe run record")
        require(version.isdigit(), f"schema {schema!r} has no integer version")
        if int(version) > SCHEMA_VERSION:
            raise RecordError(
                f"schema {schema!r} is newer than this memprobe reads ({SCHEMA}); upgrade memprobe"
            )
        procs = d.get("processes")
        require(isinstance(procs, list), "no 'processes' list")
        exit_raw = d.get("exit") or {}
        limits_raw = d.get("limits") or {}
        require(isinstance(exit_raw, dict) and isinstance(limits_raw, dict), "bad exit/limits")
        for key in ("command", "events", "findings"):
            require(isinstance(d.get(key, []), list), f"{key!r} is not a list")
        for key in ("started_at", "duration_s"):
            require(is_num(d.get(key, 0.0)), f"{key!r} is not a number")
        oom = exit_raw.get("oom_killed")
        x_axis = str(d.get("x_axis", "time"))
        gpu = limits_raw.get("gpu_bytes") or []
        return RunRecord(
            schema=schema,
            memprobe_version=str(d.get("memprobe_version", "")),
            command=str_list(d.get("command")),
            cwd=str(d.get("cwd", "")),
            started_at=opt_float(d.get("started_at")) or 0.0,
            duration_s=opt_float(d.get("duration_s")) or 0.0,
            exit=ExitInfo(
                code=opt_int(exit_raw.get("code")),
                signal=opt_int(exit_raw.get("signal")),
                oom_killed=oom if isinstance(oom, bool) else None,
            ),
            limits=Limits(
                ram_bytes=opt_int(limits_raw.get("ram_bytes")),
                ram_source=str(limits_raw.get("ram_source", "unknown")),
                gpu_bytes=[g for g in (opt_int(x) for x in as_list(gpu)) if g is not None],
            ),
            x_axis=x_axis,
            processes=[Process.from_json(p) for p in procs],
            events=[
                Event(
                    t=opt_float(e.get("t")) or 0.0,
                    pid=opt_int(e.get("pid")),
                    kind=str(e.get("kind", "")),
                    message=str(e.get("message", "")),
                )
                for e in as_list(d.get("events"))
                if isinstance(e, dict)
            ],
            findings=[Finding.from_json(f) for f in as_list(d.get("findings"))],
            verdict=str(d.get("verdict", "inconclusive")),
            signals=read_signals(d.get("signals"), x_axis),
            marks=[
                m for m in (Mark.from_json(x) for x in as_list(d.get("marks"))) if m is not None
            ],
        )
