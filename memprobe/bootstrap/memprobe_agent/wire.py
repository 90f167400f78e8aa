"""Wire messages between the in-target agent and the parent, defined once.

Standard library only: the agent imports this inside the target, the parent
imports it as ``memprobe.bootstrap.memprobe_agent.wire``.

Transport: one JSON-lines file per process, ``<run_dir>/proc-<pid>.jsonl``,
flushed line by line. Every line is one JSON object with a ``k`` (kind) field:

- ``header``: first line. pid, ppid, argv, orig_argv, executable, python,
  cwd, t0 (wall clock, seconds since the epoch), role, rank, local_rank,
  worker_id, forked_from (pid of the parent when started by fork).
- ``sample``: cheap signals. t (seconds since the process' t0, monotonic),
  step (int or null), v: {signal name: number}.
- ``census``: the expensive snapshot (object census, graphs, containers).
  t, step, plus the census payload (types, containers, graphs, tracemalloc).
- ``event``: t, kind, message. Collector switched off, fork, hooks...
- ``identity``: t, worker_id, num_workers (a DataLoader worker found its id).
- ``exit``: t, steps, reason ("atexit").
- ``mark``: t, step (steps done so far, or null), label (``memprobe.mark``).

Signal names are free-form strings; the ones the agent records today are the
constants below. Analysis accepts any name: a later collector adds a name,
nothing else changes.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple

# The version of what crosses: every header carries it (``wire``), the parent passes its own
# in the config; a process file of another version is left out of the record with an event
# (``version_problem``), never read as if it were this one. Bump it on any change a reader
# of the other version would misread.
WIRE_VERSION = 1
# The oldest Python the agent runs on (the bootstrap's sitecustomize.py keeps a copy: it must
# decide before importing this package, which needs 3.7 to compile)
MIN_PYTHON = (3, 7)

ENV_CONFIG = "MEMPROBE_CONFIG"  # JSON config; its presence switches the agent on
ERROR_FILE_PREFIX = "agent-error-"  # <run_dir>/agent-error-<pid>.txt: a bootstrap that failed

FILE_PREFIX = "proc-"
FILE_SUFFIX = ".jsonl"

K_HEADER = "header"
K_SAMPLE = "sample"
K_CENSUS = "census"
K_EVENT = "event"
K_EXIT = "exit"
K_IDENTITY = "identity"  # late facts: DataLoader worker id
K_MARK = "mark"  # memprobe.mark(label): an event on the run's timeline
MAX_MARK_LABEL = 200

# signal names
RSS = "rss_bytes"
PY_BLOCKS = "py_alloc_blocks"
GC_OBJECTS = "gc_tracked_objects"
# objects ``gc.freeze()`` moved to the permanent generation: never collected again
GC_FROZEN = "gc:frozen"
FIGURES_OPEN = "figures:open"  # pyplot's open figures (cheap.open_figures)

ROLE_MAIN = "main"
ROLE_WORKER = "worker"
ROLE_RANK = "rank"
ROLE_CHILD = "child"

# type names in census payloads that both sides read: items that are plain numbers, NumPy's
# scalars too (a container of them makes no series of its own; a dict of them keyed by text
# or tuples holds its memory in its keys), and NumPy's array and torch's tensor (a loop
# that rebuilds one longer every step: watched by its element count, see the agent's
# arrays.py)
# a container's items that are tuples of a few plain numbers (containertypes.elem_types): a
# log's records, ``(step, loss)``; never said of keys (a memo keyed by tuples keeps its keys)
NUMBER_TUPLE = "tuple of numbers"
SCALAR_TYPES = frozenset(
    ["float", "int", "bool", "complex", "NoneType", NUMBER_TUPLE]
    # NumPy's scalars: what a reduction returns (``press.append(np.mean(virial))``)
    + [f"numpy.{t}" for t in ("float16", "float32", "float64", "longdouble", "complex64")]
    + [f"numpy.{t}" for t in ("complex128", "clongdouble", "bool", "bool_")]
    + [f"numpy.{s}int{n}" for s in ("", "u") for n in (8, 16, 32, 64)]
    + ["numpy.longlong", "numpy.ulonglong", "numpy.intc", "numpy.uintc"]
)
NDARRAY = "numpy.ndarray"
# a manager's shared object, in its server process: ``container:manager[<ident>]:len`` until
# the record names it by the proxy's holder (managed.py, collect/managed.py)
MANAGED_PREFIX = "manager["
TENSOR = "torch.Tensor"

DEFAULT_SAMPLE_INTERVAL_S = 0.1  # minimum spacing of cheap samples at step boundaries
DEFAULT_IDLE_INTERVAL_S = 0.1  # background sampling when there are no steps
DEFAULT_OVERHEAD_BUDGET = 0.03  # fraction of wall time the expensive collectors may use

DEFAULT_CONFIG: Dict[str, Any] = {
    "run_dir": None,
    "wire": None,  # the parent's WIRE_VERSION (None: a config written by hand, as tests do)
    "sample_interval_s": DEFAULT_SAMPLE_INTERVAL_S,
    "idle_interval_s": DEFAULT_IDLE_INTERVAL_S,
    "overhead_budget": DEFAULT_OVERHEAD_BUDGET,
    "census": True,
    "tracemalloc": "auto",  # "auto" | "always" | "off"
    "fail_collector": None,  # test-only: name of a collector made to raise
    "step_on": None,  # --step-on SPEC: each return of that function is a step
}


def version_problem(version: Any) -> Optional[str]:
    """None when a peer's wire ``version`` (a header's or a config's ``wire``) is this side's,
    or absent (lines and configs written by hand, as tests do: every agent and parent writes
    one); else what is wrong, in words, for the caller's message."""
    if version is None or (version == WIRE_VERSION and not isinstance(version, bool)):
        return None
    return f"wire version {str(version)[:20]} where this memprobe speaks {WIRE_VERSION}"


def proc_file_name(pid: int) -> str:
    return f"{FILE_PREFIX}{pid}{FILE_SUFFIX}"


def pid_from_file_name(name: str) -> Optional[int]:
    if not (name.startswith(FILE_PREFIX) and name.endswith(FILE_SUFFIX)):
        return None
    middle = name[len(FILE_PREFIX) : -len(FILE_SUFFIX)]
    return int(middle) if middle.isdigit() else None


def encode(message: Dict[str, Any]) -> str:
    """One line of JSON; non-finite floats become null so every line parses."""
    return json.dumps(message, separators=(",", ":"), default=str, allow_nan=False) + "\n"


def safe_encode(message: Dict[str, Any]) -> str:
    try:
        return encode(message)
    except ValueError:  # NaN or inf somewhere
        return encode(_scrub(message))


def _scrub(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {str(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v) for v in value]
    return value


def decode_lines(data: bytes) -> Tuple[List[Dict[str, Any]], bytes, int]:
    """Split complete lines out of ``data``.

    Returns (messages, the unfinished tail to keep for next time, number of
    garbage lines skipped). A line that is not a JSON object is skipped, never
    raised: a torn write must not lose the rest of the file.
    """
    messages: List[Dict[str, Any]] = []
    bad = 0
    *complete, tail = data.split(b"\n")
    for raw in complete:
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested too deep
            bad += 1
            continue
        if isinstance(obj, dict) and isinstance(obj.get("k"), str):
            messages.append(obj)
        else:
            bad += 1
    return messages, tail, bad


def read_file(path: str) -> Tuple[List[Dict[str, Any]], int]:
    """Every complete message of one process file (a partial last line is dropped)."""
    with open(path, "rb") as f:
        data = f.read()
    messages, tail, bad = decode_lines(data)
    if tail.strip():
        # the last line may be complete but unterminated (killed mid-write): try it
        extra, _, bad_tail = decode_lines(tail + b"\n")
        messages.extend(extra)
        bad += bad_tail
    return messages, bad


def iter_proc_files(run_dir: str) -> Iterator[Tuple[int, str]]:
    try:
        names = sorted(os.listdir(run_dir))
    except OSError:
        return
    for name in names:
        pid = pid_from_file_name(name)
        if pid is not None:
            yield pid, os.path.join(run_dir, name)


def read_error_files(run_dir: str) -> List[Tuple[int, str]]:
    """(pid, line) of every ``agent-error-<pid>.txt``: processes whose agent did not start
    (an interpreter too old, another memprobe's wire version) or failed in the bootstrap."""
    out: List[Tuple[int, str]] = []
    try:
        names = sorted(os.listdir(run_dir))
    except OSError:
        return out
    for name in names:
        middle = name[len(ERROR_FILE_PREFIX) : -len(".txt")]
        if not (name.startswith(ERROR_FILE_PREFIX) and name.endswith(".txt") and middle.isdigit()):
            continue
        try:
            with open(os.path.join(run_dir, name), encoding="utf-8", errors="replace") as f:
                lines = f.read(64 * 1024).splitlines()
        except OSError:
            continue
        out.extend((int(middle), line) for line in lines[:20] if line.strip())
    return out


# --step-on SPEC: checked by the parent's command line before the run, resolved by the agent
class SpecError(ValueError):
    """A --step-on SPEC that cannot name a function; the message says what to give."""


def parse_spec(spec: str) -> Tuple[str, str, str]:
    """(kind "file" | "module", file or module, qualname) of a SPEC, or SpecError."""
    target, sep, qualname = spec.strip().rpartition(":")
    usage = "give FILE:FUNCTION (train.py:evaluate) or MODULE:QUALNAME (envs.cartpole:Env.step)"
    if not sep or not target or not qualname:
        raise SpecError(f"--step-on {spec!r}: no ':'; {usage}")
    if "<locals>" in qualname:
        raise SpecError(
            f"--step-on {spec!r}: a function nested in another is made anew on each call; "
            "give a module-level function or a method"
        )
    if not all(part.isidentifier() for part in qualname.split(".")):
        raise SpecError(f"--step-on {spec!r}: {qualname!r} is not a dotted name; {usage}")
    if target.endswith(".py") or "/" in target or os.sep in target:
        return "file", target, qualname
    if not all(part.isidentifier() for part in target.split(".")):
        raise SpecError(f"--step-on {spec!r}: {target!r} is neither a .py file nor a module")
    return "module", target, qualname
