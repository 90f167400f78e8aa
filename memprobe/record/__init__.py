"""The run record (``run.json``): the contract between ``run``, ``report`` and ``diff``.

- ``model``: the run, its exit, limits, events, marks and findings (frozen dataclasses);
- ``process``: one process and its series;
- ``fields``: the schema version (with its changelog) and the JSON-valued fields' shapes;
- ``summary``: ``SignalSummary``, one signal's verdict and fit (``RunRecord.signals``);
- ``validate``: the checks every loaded field goes through, and ``RecordError``;
- ``files``: ``load`` and ``save``.

Everything public is importable from here: ``from memprobe.record import RunRecord, load``.
"""

from memprobe.record.fields import (
    SCHEMA,
    SCHEMA_NAME,
    SCHEMA_VERSION,
    VERDICTS,
    CensusEntry,
    Culprit,
    Evidence,
    JSONValue,
    Projection,
)
from memprobe.record.files import MAX_RECORD_BYTES, load, save, schema_path
from memprobe.record.model import (
    Event,
    ExitInfo,
    Finding,
    Limits,
    Mark,
    RunRecord,
)
from memprobe.record.process import Process, Series
from memprobe.record.summary import Signals, SignalSummary
from memprobe.record.validate import RecordError

__all__ = [
    "MAX_RECORD_BYTES",
    "SCHEMA",
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "VERDICTS",
    "CensusEntry",
    "Culprit",
    "Event",
    "Evidence",
    "ExitInfo",
    "Finding",
    "JSONValue",
    "Limits",
    "Mark",
    "Process",
    "Projection",
    "RecordError",
    "RunRecord",
    "Series",
    "SignalSummary",
    "Signals",
    "load",
    "save",
    "schema_path",
]
