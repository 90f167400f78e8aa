"""Agent core: the process file, the step hook, the background thread, and the entry
points (``step``, ``watch``, ``mark``, ``start``, ``start_in_process``, ``stop``).
Writing, collectors and cheap samples are in sampler.py (``Sampler``, which ``Agent``
inherits).

Everything that can fail is wrapped: a collector that raises is switched off
and reported as an event; the target never sees an exception from here.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from typing import Any, Dict, Optional, Set

from . import (
    cheap,
    expensive,
    gilshare,
    identity,
    interrupts,
    managed,
    relay,
    stepon,
    watching,
    wire,
    workerdata,
)
from .sampler import Sampler

_agent: Optional[Agent] = None
JOIN_AT_EXIT_S = 2.0
_hook_registered = False
_HOOK_LOCK = threading.Lock()
_hook_handle: Any = None  # torch's handle of our optimizer hook: stop() removes it
_fork_handler = False


class Agent(Sampler):
    def __init__(self, config: Dict[str, Any], forked_from: Optional[int] = None) -> None:
        self.config = config
        self.run_dir: str = config["run_dir"]
        self.sample_interval = float(
            config.get("sample_interval_s", wire.DEFAULT_SAMPLE_INTERVAL_S)
        )
        self.idle_interval = float(config.get("idle_interval_s", wire.DEFAULT_IDLE_INTERVAL_S))
        # no step for this long: the loop is not stepping (an evaluation phase, a stall),
        # and samples come from the background thread again, on time
        self.stall_s = max(1.0, self.idle_interval)
        self._fail = config.get("fail_collector")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.disabled: Set[str] = set()
        self.relay = relay.from_config(config) if forked_from is None else None
        self.step_on: Optional[stepon.StepOn] = None
        # a Ctrl-C held back while a census runs in the main thread (see interrupts.py)
        self.interrupts = interrupts.Interrupts()
        self.gil = gilshare.GilShare()
        self._open(forked_from)

    # -- lifecycle -------------------------------------------------------------------------

    def _open(self, forked_from: Optional[int]) -> None:
        self.pid = os.getpid()
        self.t0 = time.monotonic()
        self.sampled = False  # a sample was written (a program may end before the first)
        self.steps = 0
        self.last_step_sample = float("-inf")
        self.last_step_t = float("-inf")
        self.first_step_t = float("inf")
        self.last_bg_sample = float("-inf")
        # the agent's own CPU: in the program's threads when a sample or a census was due at a
        # step (the step hook's bookkeeping alone, a few hundred ns, is not counted), and
        # its background thread's, reported at exit (see close)
        self.step_cpu = 0.0
        self.thread_cpu = 0.0
        self.fd: Optional[int] = None
        self.path = os.path.join(self.run_dir, wire.proc_file_name(self.pid))
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._fd_id = cheap.file_id(self.fd)
        self.rss = cheap.RssReader()
        self.live = cheap.LiveCounts()
        self.ident = identity.Identity(forked_from)
        self.dataset: Optional[workerdata.DatasetWatch] = None
        self.managed: Optional[managed.ManagerWatch] = None  # in a manager's server process
        # a forked child starts with no watches: measuring the parent's objects there would
        # copy the pages it shares with its parent (see expensive.py)
        self.watches = watching.Watches(
            float(self.config.get("overhead_budget", wire.DEFAULT_OVERHEAD_BUDGET)),
            self.sample_interval,
            self.event,
        )
        self.emit(self.ident.header(self.t0, forked_from))
        self.expensive = expensive.Expensive(self)
        self._thread = threading.Thread(target=self._loop, name="memprobe-agent", daemon=True)
        self._thread.start()
        self.thread_ident = self._thread.ident

    def after_fork_in_child(self) -> None:
        parent = self.pid
        self._lock = threading.Lock()
        self._stop = threading.Event()
        if self.fd is not None and cheap.file_id(self.fd) == self._fd_id:
            try:
                os.close(self.fd)
            except OSError:
                pass
        self.rss.close()
        if self.relay is not None:
            self.relay.close()
            self.relay = None
        try:
            self._open(forked_from=parent)
        except OSError:
            self.fd = None

    def close(self, reason: str) -> None:
        self._stop.set()
        # The interpreter is about to finalize: a daemon thread still inside torch's C++
        # code then is ended by pthread_exit, and an unwind through a noexcept frame
        # aborts the whole process (SIGABRT, "terminate called without an active
        # exception"). Let the background thread leave what it is doing first.
        thread = getattr(self, "_thread", None)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=JOIN_AT_EXIT_S)
        # no sample and no census here: the program's own code has finished (its main()
        # returned, its locals are gone), and a point taken now would say its memory fell.
        # Only an open tracemalloc window is closed, for where the leak was allocated.
        # A program that ended before the first sample gets one point, its only one (there
        # is no series for it to poison).
        if not self.sampled:
            self.collect("exit_sample", self.sample, None, time.monotonic())
        self.collect("expensive", self.expensive.on_exit, self.steps, time.monotonic())
        if self.step_on is not None:
            unmatched = self.step_on.unmatched()
            if unmatched is not None:
                self.event("step_on_unmatched", unmatched)
            self.step_on.close()
        self._report_cost()
        self.emit({"k": wire.K_EXIT, "t": self.now(), "steps": self.steps, "reason": reason})

    # -- the step hook and the background thread -------------------------------------------

    def ensure_hook(self) -> None:
        """Register the optimizer hook once torch is there (from the agent's thread, or at
        once from ``start_in_process`` when the program imported torch already)."""
        global _hook_registered
        with _HOOK_LOCK:
            if not _hook_registered:
                # off: the caller counts its own steps (the pytest plugin's repetitions)
                _hook_registered = not self.config.get("optimizer_hook", True) or (
                    self._try_register_hook()
                )

    def _loop(self) -> None:
        poll = 0.02
        began, cpu = time.monotonic(), time.thread_time()
        while not self._stop.wait(poll):
            try:
                # the cycle's wall time past its wait and its own CPU: waits for the GIL
                said = self.gil.woke(time.monotonic() - began - poll - (time.thread_time() - cpu))
                began, cpu = time.monotonic(), time.thread_time()
                if said is not None:
                    self.event("gil_share", said)
                if self.interrupts.pending:
                    self.interrupts.deliver()
                if not _hook_registered:
                    self.ensure_hook()
                else:
                    poll = min(self.time_pace(time.monotonic()), 0.1)
                self.ident.poll(self)
                if self.step_on is not None:
                    self.collect("step_on", self.step_on.poll)
                if self.ident.worker_id is not None and self.dataset is None:
                    self.dataset = workerdata.DatasetWatch()
                if self.managed is None and managed.server() is not None:
                    self.managed = managed.ManagerWatch()
                if self.relay is not None and self.relay.poll():
                    self.event(
                        "relay",
                        "memprobe's parent is gone: this process copies its terminal output itself",
                    )
                now = time.monotonic()
                # time-based samples only while no steps come (none yet, or a long stall),
                # and only while the program's own code runs
                if (
                    now - self.last_step_t > self.stall_s
                    and now - self.last_bg_sample >= self.time_pace(now)
                    and not _program_ended()
                ):
                    self.last_bg_sample = now
                    values = self.sample(None, now)
                    self._shared_sample(now)
                    exp = self.expensive
                    if self.collect("evidence", exp.wants_look, values, now, True):
                        self.collect("expensive", exp.look_tick, now)
                    elif now >= exp.next_due or exp.stall_due(now):
                        self.collect("expensive", exp.on_tick, now)
            except Exception as e:  # noqa: BLE001
                self.event("agent_error", f"background thread: {type(e).__name__}: {e}")
                poll = max(poll, 1.0)
            self.thread_cpu = time.thread_time()  # this thread's, since it started

    def _shared_sample(self, now: float) -> None:
        """What this process keeps for others, read without a census: a DataLoader worker's
        dataset (workerdata.py), a manager's shared objects (managed.py)."""
        values: Dict[str, float] = {}
        if self.dataset is not None:
            values.update(self.collect("dataset", self.dataset.poll) or {})
        if self.managed is not None:
            values.update(self.collect("managed", self.managed.poll) or {})
        if values:
            self.emit({"k": wire.K_SAMPLE, "t": now - self.t0, "step": None, "v": values})

    def _try_register_hook(self) -> bool:
        """Register torch's global optimizer step post-hook once the target imported torch."""
        mod = sys.modules.get("torch.optim.optimizer")
        if mod is None:
            return False
        if self.config.get("step_on"):
            self.event("step_hook", "optimizer steps are not counted: --step-on names the step")
            return True
        register = getattr(mod, "register_optimizer_step_post_hook", None)
        if register is None:
            spec = getattr(mod, "__spec__", None)
            if spec is not None and getattr(spec, "_initializing", False):
                return False  # still being imported by the target: look again shortly
            self.event(
                "no_step_hook",
                "this torch has no global optimizer step hook; "
                "call memprobe.step() each iteration for step-aligned samples",
            )
            return True
        global _hook_handle
        _hook_handle = register(_optimizer_hook)
        self.event("step_hook", "registered torch's global optimizer step post-hook")
        return True


def _optimizer_hook(optimizer: Any, args: Any, kwargs: Any) -> None:
    agent = _agent
    if agent is not None:
        agent.on_step()


def step() -> None:
    """Mark one training step (``memprobe.step()`` lands here)."""
    agent = _agent
    if agent is not None:
        agent.on_step()


def watch(name: Any, obj: Any) -> None:
    """Follow ``obj``'s deep size and length as ``watch:<name>:*`` (``memprobe.watch``)."""
    agent = _agent
    if agent is not None:
        agent.watch(name, obj)


def mark(label: Any) -> None:
    """An event on the run's timeline at the current step (``memprobe.mark``)."""
    agent = _agent
    if agent is not None:
        agent.mark(label)


def _program_ended() -> bool:
    """The main thread has left the program's code and no other thread of the program's
    keeps it alive (the interpreter is joining threads, or running atexit handlers: the
    program's own, or ``weakref.finalize``'s, which calls every pending finalizer). What a
    sample reads then is the program taking itself apart, not its memory."""
    main = threading.main_thread()
    if main.is_alive():
        return False
    others = [t for t in threading.enumerate() if t is not main]
    return not any(t.is_alive() and not t.daemon for t in others)


def _after_fork_in_child() -> None:
    agent = _agent
    if agent is not None:
        agent.after_fork_in_child()


def _atexit() -> None:
    agent = _agent
    if agent is not None and agent.pid == os.getpid():
        agent.close("atexit")


def start() -> bool:
    """Start the agent if MEMPROBE_CONFIG is set; a second call is a no-op."""
    global _agent
    if _agent is not None:
        return False
    raw = os.environ.get(wire.ENV_CONFIG)
    if not raw:
        return False
    config = dict(wire.DEFAULT_CONFIG)
    config.update(json.loads(raw))
    if not config.get("run_dir"):
        return False
    problem = wire.version_problem(config.get("wire"))
    if problem is not None:  # another memprobe's parent: it would misread what we write
        message = (
            f"the agent in pid {os.getpid()} did not start: the memprobe that started "
            f"the run has {problem} (is another memprobe's bootstrap on PYTHONPATH?)"
        )
        _report_failure(str(config["run_dir"]), message)
        return False
    _agent = Agent(config)
    _agent.start_step_on()
    atexit.register(_atexit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_in_child)
    return True


def _report_failure(run_dir: str, message: str) -> None:
    """One line in ``agent-error-<pid>.txt``, as the bootstrap writes when the agent cannot
    start; the parent turns it into an event."""
    try:
        path = os.path.join(run_dir, f"{wire.ERROR_FILE_PREFIX}{os.getpid()}.txt")
        with open(path, "a") as f:
            f.write(message.replace("\n", " ") + "\n")
    except OSError:
        pass


def start_in_process(config: Dict[str, Any]) -> bool:
    """Start an agent on this process with ``config`` (``memprobe.track()``); no atexit, no
    fork handler of its own (``stop()`` undoes everything). False if one already runs here."""
    global _agent
    if _agent is not None:
        return False
    global _fork_handler
    full = dict(wire.DEFAULT_CONFIG)
    full.update(config)
    _agent = Agent(full)
    if "torch" in sys.modules:
        _agent.ensure_hook()  # the steps from the first one on, not from the thread's first look
    if not _fork_handler and hasattr(os, "register_at_fork"):
        _fork_handler = True  # once per process: a fork handler cannot be taken back
        os.register_at_fork(after_in_child=_forget_in_child)
    return True


def _forget_in_child() -> None:
    """A forked child of a process sampled in-process is not followed (its agent thread did
    not survive the fork, and its samples would land in the parent's file)."""
    global _agent
    if _agent is not None and _agent.config.get("in_process"):
        _agent = None


def stop(reason: str = "stopped") -> None:
    """Stop the agent started by ``start_in_process``: its thread joined, the optimizer hook
    removed, its tracemalloc window ended, its files closed. Nothing of it stays running."""
    global _agent, _hook_registered, _hook_handle
    agent = _agent
    if agent is None:
        return
    _agent = None  # hooks that fire from now on see no agent
    agent.close(reason)
    handle, _hook_handle, _hook_registered = _hook_handle, None, False
    if handle is not None:
        try:
            handle.remove()
        except Exception:  # noqa: BLE001 - torch torn down: nothing left to remove
            pass
    agent.expensive.tm.close()
    agent.rss.close()
    fd, agent.fd = agent.fd, None
    if fd is not None and cheap.file_id(fd) == agent._fd_id:
        try:
            os.close(fd)
        except OSError:
            pass
