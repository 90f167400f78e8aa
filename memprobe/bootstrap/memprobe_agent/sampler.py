"""The agent's writing and cheap sampling: its lines in the process file, the collectors
(switched off for good when one raises), the samples at steps and on time, watches, marks,
``--step-on`` and what the agent cost the program.

``Sampler`` holds these; ``core.Agent`` inherits them, opens the process file, sets up
the state they read and write, and runs the step hook and the background thread.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable, Dict, Optional, Set

from . import cheap, stepon, watching, wire
from .expensive import Expensive

# the first seconds of stepping are sampled at twice the pace: a short run (a few seconds
# of loop) still gets enough points to judge, at a cost of tens of microseconds a sample
EARLY_S = 10.0


class Sampler:
    """The writing and sampling of ``core.Agent`` (which sets up this state)."""

    config: Dict[str, Any]
    sample_interval: float
    idle_interval: float
    disabled: Set[str]
    step_on: Optional[stepon.StepOn]
    t0: float
    sampled: bool
    steps: int
    last_step_sample: float
    last_step_t: float
    first_step_t: float
    step_cpu: float
    thread_cpu: float
    fd: Optional[int]
    path: str
    rss: cheap.RssReader
    live: cheap.LiveCounts
    watches: watching.Watches
    expensive: Expensive
    _fail: Any
    _lock: threading.Lock
    _fd_id: Optional[cheap.FileId]

    def _report_cost(self) -> None:
        """What the agent cost the program, as CPU seconds it measured itself: a figure that
        does not move with the machine's load the way a comparison of two runs does."""
        elapsed = self.now()
        own = self.step_cpu + self.thread_cpu
        share = 100.0 * own / elapsed if elapsed > 0 else 0.0
        # the whole process' CPU so far (every thread, the start-up included): what a
        # benchmark sets against the plain run's, without memprobe's parent in it
        process = time.process_time()
        self.event(
            "agent_cost",
            f"memprobe's agent used {self.step_cpu:.2f} s of CPU at step boundaries "
            f"(samples and censuses) and {self.thread_cpu:.2f} s on its own thread: "
            f"{own:.2f} s over {elapsed:.1f} s ({share:.1f} % of one core); "
            f"the process used {process:.2f} s of CPU in all",
        )

    # -- writing ---------------------------------------------------------------------------

    def now(self) -> float:
        return time.monotonic() - self.t0

    def emit(self, message: Dict[str, Any]) -> None:
        fd = self.fd
        if fd is None:
            return
        data = wire.safe_encode(message).encode("utf-8", "replace")
        try:
            with self._lock:
                fd = self._own_fd(fd)
                # O_APPEND + one write per line: lines from threads never interleave
                while data:
                    n = os.write(fd, data)
                    data = data[n:]
        except OSError:
            self.fd = None  # disk full or folder gone: stop writing, never raise

    def _own_fd(self, fd: int) -> int:
        """Our file's descriptor; reopened when the target closed it (``os.closerange(3, ...)``
        in daemonising code): the number may now be one of the target's own files, and a line
        written there would corrupt them. Never closed here: it is not ours any more."""
        if cheap.file_id(fd) == self._fd_id:
            return fd
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)  # no O_CREAT: folder gone, stop
        self.fd, self._fd_id = fd, cheap.file_id(fd)
        return fd

    def event(self, kind: str, message: str) -> None:
        self.emit({"k": wire.K_EVENT, "t": self.now(), "kind": kind, "message": message})

    def collect(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Run one collector; on any exception switch it off for good and say so."""
        if name in self.disabled:
            return None
        try:
            if self._fail == name:
                raise RuntimeError("injected failure (MEMPROBE test switch)")
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - the target must never see our errors
            self.disabled.add(name)
            self.event(
                "collector_off",
                f"collector {name!r} raised {type(e).__name__}: {e}; "
                "switched off for the rest of the run",
            )
            return None

    # -- sampling --------------------------------------------------------------------------

    def sample(self, step: Optional[int], now: float) -> Dict[str, Any]:
        values: Dict[str, Any] = {}
        rss = self.collect("rss", self.rss.read)
        if rss is not None:
            values[wire.RSS] = rss
        self.collect("py_blocks", cheap.python_blocks, values)
        self.collect("live_counts", self.live.read, values)
        self.collect("open_figures", cheap.open_figures, values)
        self.collect("cuda", cheap.cuda_signals, values)
        self.collect("watch", self.watches.sample, values, now)
        self.emit({"k": wire.K_SAMPLE, "t": now - self.t0, "step": step, "v": values})
        self.sampled = True
        return values

    def on_step(self) -> None:
        self.steps += 1
        now = time.monotonic()
        self.last_step_t = now
        if self.steps == 1:
            self.first_step_t = now
        sample = now - self.last_step_sample >= self.pace(self.sample_interval, now)
        exp = self.expensive
        if not (sample or now >= exp.next_due):
            return
        cpu = time.thread_time()
        values: Optional[Dict[str, Any]] = None
        if sample:
            self.last_step_sample = now
            values = self.sample(self.steps, now)
        if values is not None and self.collect("evidence", exp.wants_look, values, now):
            self.collect("expensive", exp.look_now, self.steps, now)
        elif now >= exp.next_due:
            self.collect("expensive", exp.on_step, self.steps, now)
        self.step_cpu += time.thread_time() - cpu

    def pace(self, interval: float, now: float) -> float:
        """``interval``, halved during the first ``EARLY_S`` seconds of stepping."""
        return interval / 2 if now - self.first_step_t < EARLY_S else interval

    def time_pace(self, now: float) -> float:
        """The background sampling interval: halved in the process' first ``EARLY_S``
        seconds (a loop without steps that runs a few seconds gets enough points)."""
        return self.idle_interval / 2 if now - self.t0 < EARLY_S else self.idle_interval

    def watch(self, name: Any, obj: Any) -> None:
        self.collect("watch", self.watches.add, name, obj)

    def mark(self, label: Any) -> None:
        text = label if isinstance(label, str) else repr(label)
        self.emit(
            {
                "k": wire.K_MARK,
                "t": self.now(),
                "step": self.steps or None,
                "label": text[: wire.MAX_MARK_LABEL],
            }
        )

    def start_step_on(self) -> None:
        spec = self.config.get("step_on")
        if not spec:
            return
        try:
            self.step_on = stepon.StepOn(str(spec), self.on_step, self.event)
            self.step_on.start()
        except Exception as e:  # noqa: BLE001 - the target runs whatever the spec
            self.event("step_on_error", f"--step-on {spec}: {type(e).__name__}: {e}")
