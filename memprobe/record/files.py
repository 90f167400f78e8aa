"""A record on disk: ``load`` refuses anything that is not one with a one-line reason,
``save`` writes atomically with mode 0600."""

from __future__ import annotations

import json
import math
import os
import tempfile
from typing import Any

from memprobe.record.model import RunRecord
from memprobe.record.validate import RecordError

MAX_RECORD_BYTES = 512 * 1024 * 1024  # refuse to parse anything larger


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
    """The record's JSON Schema (``memprobe/schema/``)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(package, "schema", "run-1.schema.json")
