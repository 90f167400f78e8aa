"""The record's schema version and the shapes of its JSON-valued fields (culprits,
projections, evidence, census entries; the signal summaries are ``summary.SignalSummary``).

Schema changelog (bump SCHEMA_VERSION and keep a golden file per version in
tests/data/):

- ``memprobe.run/1``: first version. Later additions, optional, read with defaults:
  ``marks`` (``memprobe.mark`` labels on the timeline).

Fields added later must be read with defaults so older files keep loading.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, TypedDict, Union

SCHEMA_NAME = "memprobe.run"
SCHEMA_VERSION = 1
SCHEMA = f"{SCHEMA_NAME}/{SCHEMA_VERSION}"

VERDICTS = ("leak", "no_leak", "inconclusive")


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
    chain_links: int  # objects in a chain of a growing type (agent's chains.py)
    frozen: int  # objects gc.freeze() moved to the permanent generation (census "gc")
    grad_graphs: int  # leaves whose .grad holds an autograd graph (census "tensors")
    container_type: str
    key_type: str  # a dict whose memory is in its keys: their type
    container_bytes: float
    holder_types: List[str]  # Class.attribute of each attribute on the holder's path
    atexit_callbacks: int  # atexit's callbacks at the last census (culprit_outside)
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
    siblings: List[str]  # holders grouped as parts of one culprit (analysis/siblings.py)


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
    native: List[JSONValue]  # handles on memory outside Python's objects (agent's native.py)
    gc: Dict[str, JSONValue]  # {"frozen": objects gc.freeze() moved out of the collector's reach}
    chains: List[JSONValue]  # objects of a growing type each keeping the last (chains.py)
    tracemalloc: Dict[str, JSONValue]
    objects_total: int
    truncated: bool
    duration_s: float
    budget: Dict[str, JSONValue]
    timings: Dict[str, JSONValue]
    stride: int
