"""``memprobe.track()``: sample the current process, judge it as ``memprobe run`` would.

For notebooks and programs that cannot be relaunched. The same agent that ``memprobe run``
injects is started in this process, on its own thread, writing the same per-process wire
file into a private temporary run folder (``0700``) beside a journal of its own; when the
block ends the agent is stopped (its thread joined, torch's optimizer hook removed, its
tracemalloc window closed, its files closed) and the folder is read back and judged by
exactly the code ``memprobe report RUN_DIR`` runs (``rebuild`` then ``finalize``).

What it cannot see from inside, unlike ``memprobe run``:

- other processes: forked or spawned children (DataLoader workers, ranks) are not
  followed, and there are no USS/PSS or per-process GPU figures (those are taken from
  outside by the launcher);
- what happened before the block: memory taken by imports and set-up before ``track()``
  started is the baseline, and a peak reached earlier is not known;
- its own cost: the agent's thread and census share the process with the code measured.
"""

from __future__ import annotations

import importlib
import io
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO, Any, Dict, List, Optional, Type

from memprobe import __version__
from memprobe import record as rec
from memprobe.analysis.options import DetectOptions
from memprobe.bootstrap.memprobe_agent import wire
from memprobe.collect.journal import PARENT_FILE
from memprobe.errors import MemprobeError

__all__ = ["Run", "TrackError", "TrackOptions", "track"]

BOOTSTRAP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap")
AGENT = "memprobe_agent"


class TrackError(MemprobeError):
    """``track()`` cannot sample this process; the message says why and what to do."""


@dataclass(frozen=True)
class TrackOptions:
    """The agent's settings (those of ``memprobe run``'s options of the same names)."""

    sample_interval_s: float = wire.DEFAULT_SAMPLE_INTERVAL_S
    idle_interval_s: float = wire.DEFAULT_IDLE_INTERVAL_S
    overhead_budget: float = wire.DEFAULT_OVERHEAD_BUDGET
    census: bool = True
    tracemalloc: str = "auto"
    keep_run_dir: bool = False  # leave the wire files behind (``Run.run_dir``)
    extra_config: Dict[str, Any] = field(default_factory=dict)  # more agent keys
    detect: Optional[DetectOptions] = None  # the detector's thresholds (default: the CLI's)


def track(**options: Any) -> Run:
    """Sample this process inside a ``with`` block; the ``Run`` it gives holds the verdict.

    ::

        with memprobe.track() as run:
            train()            # optimizer.step(), memprobe.step() or run.step() mark steps
        print(run.verdict)     # "leak" | "no_leak" | "inconclusive"
        print(run.report())
        run.save("run.json")   # memprobe report run.json / memprobe diff a.json run.json

    Keyword arguments are ``TrackOptions`` fields. Other processes, memory taken before
    the block and the peak before it are not seen (see the module's docstring).
    """
    return Run(TrackOptions(**options))


class Run:
    """One in-process run: a context manager, then the judged record."""

    def __init__(self, options: Optional[TrackOptions] = None) -> None:
        self.options = options or TrackOptions()
        self.record: Optional[rec.RunRecord] = None
        self.run_dir: Optional[str] = None
        self.analysis_error: Optional[str] = None
        self._core: Any = None
        self._t0 = 0.0
        self._journal: Optional[IO[str]] = None

    # -- the block -------------------------------------------------------------------------

    def __enter__(self) -> Run:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.stop(failed=exc_type is not None)

    def start(self) -> None:
        if self._core is not None or self.record is not None:
            raise TrackError("this Run has already been started; call memprobe.track() again")
        core = _agent_core()
        run_dir = tempfile.mkdtemp(prefix="memprobe-track-")  # 0700, like memprobe run's
        self._t0 = time.monotonic()
        self._write_meta(run_dir)
        config = {
            "run_dir": run_dir,
            "root_pid": os.getpid(),
            "in_process": True,
            "sample_interval_s": self.options.sample_interval_s,
            "idle_interval_s": self.options.idle_interval_s,
            "overhead_budget": self.options.overhead_budget,
            "census": self.options.census,
            "tracemalloc": self.options.tracemalloc,
            **self.options.extra_config,
        }
        if not core.start_in_process(config):
            self._close_journal()
            shutil.rmtree(run_dir, ignore_errors=True)
            raise TrackError(
                "this process is already sampled by memprobe (under `memprobe run`, or inside "
                "another memprobe.track() block); its report has these findings already"
            )
        self.run_dir, self._core = run_dir, core

    def step(self) -> None:
        """Mark one step (as ``memprobe.step()`` or ``optimizer.step()`` do)."""
        if self._core is not None:
            self._core.step()

    def stop(self, failed: bool = False) -> None:
        """Stop sampling, judge what was sampled. Nothing of the agent stays running."""
        core, self._core = self._core, None
        if core is None:
            return
        try:
            core.stop("track_end")
        finally:
            self._finish_journal(failed)
        run_dir = self.run_dir
        assert run_dir is not None
        try:
            self.record = judge(run_dir, self.options.detect)
        except Exception as e:  # noqa: BLE001 - never hide the block's own outcome
            self.analysis_error = f"{type(e).__name__}: {e}"
        finally:
            if not self.options.keep_run_dir:
                shutil.rmtree(run_dir, ignore_errors=True)
                self.run_dir = None

    # -- results ---------------------------------------------------------------------------

    def _judged(self) -> rec.RunRecord:
        if self.record is None:
            if self.analysis_error is not None:
                raise TrackError(f"memprobe could not judge this run: {self.analysis_error}")
            raise TrackError("no result yet: read it after the `with memprobe.track()` block")
        return self.record

    @property
    def verdict(self) -> str:
        """``leak``, ``no_leak`` or ``inconclusive``, as ``memprobe run`` says it."""
        return self._judged().verdict

    @property
    def findings(self) -> List[rec.Finding]:
        """The findings (leaks with their culprit and holder first, as in run.json)."""
        return list(self._judged().findings)

    def leaks(self) -> List[rec.Finding]:
        return [f for f in self.findings if f.verdict == "leak"]

    def report(self, file: Optional[IO[str]] = None, width: int = 100) -> str:
        """The text report of ``memprobe report``; written to ``file`` too when given."""
        from rich.console import Console

        from memprobe.render.report import render_report

        buf = io.StringIO()
        render_report(self._judged(), Console(file=buf, width=width, highlight=False))
        text = buf.getvalue()
        if file is not None:
            file.write(text)
        return text

    def summary(self, width: int = 100) -> str:
        """The verdict line and one entry per culprit, as ``memprobe run`` ends with."""
        return summary_text(self._judged(), width)

    def save(self, path: str) -> None:
        """Write run.json (``memprobe report``, ``memprobe diff`` and ``--html`` read it)."""
        rec.save(self._judged(), path)

    def __repr__(self) -> str:
        state = self.record.verdict if self.record is not None else "running"
        return f"<memprobe.Run {state}>"

    # -- the journal: what the launcher writes for a child, written for ourselves ------------

    def _write_meta(self, run_dir: str) -> None:
        from memprobe.launch.limits import ram_limit

        ram, source = ram_limit()
        fd = os.open(os.path.join(run_dir, PARENT_FILE), os.O_WRONLY | os.O_CREAT, 0o600)
        self._journal = open(fd, "w", encoding="utf-8")  # noqa: SIM115 - closed in stop
        self._journal_write(
            {
                "k": "meta",
                "command": list(getattr(sys, "orig_argv", sys.argv)),
                "cwd": os.getcwd(),
                "started_at": time.time(),
                "memprobe_version": __version__,
                "in_process": True,
                "limits": {"ram_bytes": ram, "ram_source": source, "gpu_bytes": _gpu_totals()},
            }
        )

    def _journal_write(self, message: Dict[str, Any]) -> None:
        if self._journal is not None:
            self._journal.write(wire.safe_encode(message))
            self._journal.flush()

    def _finish_journal(self, failed: bool) -> None:
        duration = time.monotonic() - self._t0
        self._journal_write(
            {
                "k": wire.K_EVENT,
                "t": duration,
                "pid": os.getpid(),
                "kind": "in_process",
                "message": "sampled in-process by memprobe.track(): other processes, and "
                "memory taken before the block, are not seen",
            }
        )
        code = 1 if failed else 0
        exit_line = {"k": wire.K_EXIT, "code": code, "signal": None, "oom_killed": None}
        self._journal_write({**exit_line, "duration_s": duration})
        self._close_journal()

    def _close_journal(self) -> None:
        journal, self._journal = self._journal, None
        if journal is not None:
            journal.close()


def judge(run_dir: str, detect: Optional[DetectOptions] = None) -> rec.RunRecord:
    """The record of a run folder, analysed: the very path of ``memprobe report RUN_DIR``."""
    from memprobe.analysis.finalize import finalize
    from memprobe.collect.rebuild import rebuild

    return finalize(rebuild(run_dir), detect)


def summary_text(record: rec.RunRecord, width: int = 100) -> str:
    from rich.console import Console

    from memprobe.commands.run import print_summary

    buf = io.StringIO()
    print_summary(record, Console(file=buf, width=width, highlight=False, soft_wrap=True))
    return buf.getvalue()


def _agent_core() -> Any:
    """The agent's core module, imported by its own top-level name as the bootstrap does (so
    it knows its own objects and files, and ``memprobe.step()`` reaches it)."""
    mod = sys.modules.get(AGENT)
    if mod is None or f"{AGENT}.core" not in sys.modules:
        sys.path.insert(0, BOOTSTRAP_DIR)
        try:
            # the package loads its core lazily: import it by name
            importlib.import_module(f"{AGENT}.core")
            mod = sys.modules.get(AGENT)
        except ImportError:
            pass
        finally:
            try:
                sys.path.remove(BOOTSTRAP_DIR)
            except ValueError:
                pass
    core = sys.modules.get(f"{AGENT}.core")
    if core is None or not hasattr(core, "start_in_process"):
        where = getattr(mod, "__file__", "?")
        raise TrackError(
            f"the memprobe agent loaded in this process ({where}) is not this memprobe's "
            f"({__version__}) and cannot sample in-process; run without `memprobe run`"
        )
    return core


def _gpu_totals() -> List[int]:
    """Device totals from torch, only if the program already initialised CUDA (never NVML or
    CUDA initialisation from here: that costs hundreds of MB in the measured process)."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    try:
        if cuda is None or not cuda.is_initialized():
            return []
        return [int(cuda.get_device_properties(i).total_memory) for i in range(cuda.device_count())]
    except Exception:  # noqa: BLE001
        return []
