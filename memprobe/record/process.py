"""One process of a run as the record keeps it: who it was, its series, its censuses."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, cast

from memprobe.record.fields import CensusEntry
from memprobe.record.validate import (
    is_int,
    is_num,
    opt_float,
    opt_int,
    opt_str,
    require,
    str_list,
)


@dataclass(frozen=True)
class Series:
    step: List[Optional[int]]
    t: List[float]
    value: List[float]

    def to_json(self) -> Dict[str, Any]:
        return {"step": list(self.step), "t": list(self.t), "value": list(self.value)}

    @staticmethod
    def from_json(d: Any) -> Series:
        require(isinstance(d, dict), "a series is not an object")
        step, t, value = d.get("step", []), d.get("t", []), d.get("value", [])
        require(
            isinstance(step, list) and isinstance(t, list) and isinstance(value, list),
            "series fields must be lists",
        )
        require(len(t) == len(value) == len(step), "series lists have different lengths")
        require(
            all(is_num(x) for x in t) and all(is_num(x) for x in value),
            "series times and values must be numbers",
        )
        require(all(x is None or is_int(x) for x in step), "series steps must be integers")
        return Series(step=step, t=t, value=value)


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
        require(isinstance(d, dict), "a process entry is not an object")
        require(is_int(d.get("pid")), "a process entry has no integer pid")
        series_raw = d.get("series", {})
        require(isinstance(series_raw, dict), "process series is not an object")
        census = d.get("census", [])
        require(isinstance(census, list), "process census is not a list")
        return Process(
            pid=d["pid"],
            parent_pid=opt_int(d.get("parent_pid")),
            role=str(d.get("role", "main")),
            rank=opt_int(d.get("rank")),
            worker_id=opt_int(d.get("worker_id")),
            argv=str_list(d.get("argv")),
            python=opt_str(d.get("python")),
            started_at=opt_float(d.get("started_at")),
            ended=opt_str(d.get("ended")),
            has_agent=bool(d.get("has_agent", True)),
            steps=opt_int(d.get("steps")) or 0,
            series={str(k): Series.from_json(v) for k, v in series_raw.items()},
            census=[cast(CensusEntry, c) for c in census if isinstance(c, dict)],
            local_rank=opt_int(d.get("local_rank")),
            node=opt_int(d.get("node")),
            name=opt_str(d.get("name")),
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
