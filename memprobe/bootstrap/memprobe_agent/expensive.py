"""Expensive collectors (object census, autograd graphs, holders, tracemalloc window).

Scheduled on an overhead budget. ``next_due`` is the monotonic time at or after
which the agent calls ``on_step`` (at a step boundary) or ``on_tick`` (from the
background thread when no steps come); ``on_exit`` runs once at exit.

The census itself and its message (``k: "census"``) are in censustaker.py.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Optional, Set, Tuple

from . import carried, threadsafe, wire
from .budget import Budget
from .censustaker import SUSPICIOUS_DELTA, CensusTaker
from .containers import ContainerTracker
from .tmwindow import TraceWindow

FORCED = 4  # censuses at fixed steps (5, 25, 100, 400) whatever the budget
TM_MIN_GAP_S = 30.0
# A program without steps (an evaluation loop, a generation of an evolutionary search, a
# script that only runs forward) gets censuses from the background thread: the first
# after this long, a second TICK_SECOND_S later whatever the budget (a short run must see
# a container grow), then on the budget.
TICK_AFTER_S = 1.0
TICK_SECOND_S = 0.5
TICK_FORCED = 3  # the first censuses of a program without steps, TICK_SECOND_S and more apart
# A program that stepped and then stopped (an evaluation phase after training, a rollout or
# test-time loop without an optimizer) is looked at from the background thread too once no
# step came for STALL_LOOK_S: the first looks of each such phase are forced, STALL_SECOND_S
# apart (a baseline and a second look, to see a container grow), at most STALL_FORCED_RUN
# in a run (validation phases come back every epoch), then on the budget.
STALL_LOOK_S = 1.0
STALL_SECOND_S = 1.0
STALL_FORCED = 2
STALL_FORCED_RUN = 4
# What forced looks may cost in all (CPU seconds of the census) before the rest wait for the
# budget. CPU, not wall: on a loaded machine (a core's worth of other work per core) a census
# of 0.15 s of CPU took 0.5-1.5 s of wall, and two looks while torch imported spent the
# limit before the loop's first step; the loop's looks at 100 and 400 went, and a running
# sum's graph was seen twice in a 50 s run (the budget itself stays in wall time). The
# first two at steps (5, 25: a baseline and a look that sees a container grow) are always
# taken; those at steps 100 and 400 while all forced looks cost less than FORCED_MAX_S; the
# looks of a program without steps (yet) while they cost less than TICK_FORCED_MAX_S, those
# of a phase without steps less than STALL_FORCED_MAX_S. On an ordinary script's heap (a
# census of 0.05-0.2 s here) that is every one of them; on a framework's (0.3-0.7 s: the
# Hugging Face Trainer, Lightning) two or three, where they had cost 2-4 s: most of the
# looks before the first step (the framework setting up) were thrown away at that step.
# (Skipping the looks at 100 and 400 on any heap whose census takes 0.15 s of CPU saved a
# framework run ~0.5 s, but ordinary scripts that import matplotlib take 0.15-0.17 s too:
# two wild_b leaks were left with two censuses in 14 s and no holder.) The censuses taken on
# the budget before the first step count too: a framework's first look comes while it sets
# up (Lightning: two of 0.24 s), and with them the look at step 100 would make six in
# the first 13 s of a run that then needs one every 30 s.
# Those before the first step weigh at most PRESTEP_MAX_S: on a loaded machine torch's
# import pauses for seconds between modules, and looks taken in it while the program sets
# up are no look at its loop (a framework's two of 0.24 s are under it).
FORCED_MAX_S = 1.0
PRESTEP_MAX_S = 0.5
TICK_FORCED_MAX_S = 0.3
STALL_FORCED_MAX_S = 0.6
ALWAYS_FORCED = 2
# Looks on evidence: censuses are seconds apart (tens of seconds on a big heap or a busy
# machine), and the holder of what accumulates is named only by a census that sees it. When
# a dense count of heavy objects has grown this much since the last census (by ``least`` and
# by ``share`` of what the census counted), the agent looks at the next step boundary, on
# no credit, like the fixed-step looks: at most ``EVIDENCE_LOOKS`` a run, ``EVIDENCE_GAP_S``
# apart (a search keeping every trial's model, 250 ms steps, had three censuses in 30 s,
# all before its second trial).
EVIDENCE_LOOKS = 3
EVIDENCE_GAP_S = 5.0
_EVIDENCE_COUNTS = (
    ("modules:count", 4, 0.25),
    ("figures:count", 4, 0.25),
    ("tensors:count", 256, 0.25),
)
# Memory itself is evidence too: what piles up is not always more objects. A running sum
# kept with its graph (``running = running + loss`` in a closure) is one tensor whose chain
# grows, so no count moves while RSS climbs by hundreds of MB. RSS that rose by this many
# bytes and this share above its high-water mark up to the last census asks for a look the
# same way: above the mark, not above the reading at the census, so a program whose RSS
# swings (a batch's copies made and freed) asks nothing by swinging, and a lower threshold
# serves a slow pile of heavy objects (exceptions kept with their tracebacks, 3 MB/s on a
# 320 MB process: four looks in 22 s, the last at step 400, none after it). Replayed on the
# idle records of 183 scripts (ten corpora and two new ones), this asks for 116 looks in
# leaking scripts against 27 (a 25 % and 64 MiB rise over the census' reading) and 5 in
# correct ones against 1 (four scripts one look more: warm-ups that set a new high).
_EVIDENCE_RSS = (32 * 1024 * 1024, 0.10)


class Expensive(CensusTaker):
    def __init__(self, agent: Any) -> None:
        cfg = agent.config
        self.agent = agent
        now = time.monotonic()
        self.deferred = 0
        self.imports = threadsafe.ImportWatch()
        self.enabled = bool(cfg.get("census", True))
        ident = getattr(agent, "ident", None)
        if (
            self.enabled
            and getattr(ident, "forked_from", None) is not None
            and not cfg.get("census_in_forks", False)
        ):
            # a census takes a reference to every object: in a forked child (a DataLoader
            # worker) that writes every page of the inherited heap, the copy-on-access the
            # target may be suffering from already (pytorch/pytorch#13246); cheap signals only
            self.enabled = False
            agent.event(
                "census_off",
                "no census in a forked child: touching every object "
                "would copy the pages it shares with its parent",
            )
        self.budget = Budget(float(cfg.get("overhead_budget", wire.DEFAULT_OVERHEAD_BUDGET)), now)
        self.max_objects = int(cfg.get("census_max_objects", 1_000_000))
        self.min_len = int(cfg.get("census_min_len", 2))
        self.deadline_s = float(cfg.get("census_deadline_s", 1.0))
        # two censuses at fixed steps (5 and 25 by default) whatever the budget, so that a
        # short run still sees a container grow; their cost is a debt the budget repays
        # fixed-step censuses at steps 5, 25, 100 and 400 whatever the budget: a short run
        # still sees a container grow, a slow one too (one item in forty steps); their cost
        # is a debt the budget repays
        self.force_at = int(cfg.get("census_first_step", 5))
        # ``census_steps``: the later fixed steps (an in-process caller such as the pytest
        # plugin, whose few repetitions are all the run there is, asks for its own)
        self.force_steps = [int(s) for s in cfg.get("census_steps", [25, 100, 400])]
        self.forced_total = self.forced_left = 1 + len(self.force_steps)
        # CPU seconds the forced looks cost so far before any step and in phases without
        # steps (the fixed-step looks weigh every census so far: census_cpu_s)
        self.tick_spent = self.stall_spent = 0.0  # TICK_FORCED_MAX_S, STALL_FORCED_MAX_S
        self.census_cpu_s = 0.0  # CPU seconds of every census so far (FORCED_MAX_S)
        self.prestep_cpu_s = 0.0  # of those before the first step (PRESTEP_MAX_S)
        # watched containers followed by path: a few microseconds, at the cheap-sample pace
        self.poll_s = float(
            cfg.get(
                "container_poll_s",
                max(0.05, float(cfg.get("sample_interval_s", wire.DEFAULT_SAMPLE_INTERVAL_S))),
            )
        )
        self.tracker = ContainerTracker()
        self.tm = TraceWindow(str(cfg.get("tracemalloc", "auto")))
        self.census_due = now + TICK_AFTER_S
        self.tick_forced_at = now + TICK_AFTER_S + TICK_SECOND_S
        self.based = False
        self.largest_before = 0  # bytes of the largest tensor at the last census
        self.poll_due = float("inf")
        self.tm_allowed = now
        self.seq = 0
        self.last = (now, 0)  # (time, step) of the last census
        self.prev_counts: Dict[str, int] = {}
        self.grown_kinds: Set[str] = set()  # the program's tensor (...) subclasses that grew
        self.watched_types: Dict[str, int] = {}
        self.sample_types: List[str] = []
        self.keeper_tries: Dict[str, int] = {}
        self.prev_v: Dict[str, float] = {}
        self.rss_before: Optional[int] = None  # RSS's high-water mark up to the last census
        self.rss_peak = 0  # RSS's highest cheap sample so far
        self.said: Set[Any] = set()
        self.graph_holders = carried.GraphHolders(SUSPICIOUS_DELTA)  # graphs carried across steps
        # the first census that sees graph-holding tensors asks for one more soon: whether
        # a graph is carried across steps takes two looks (see carried.py)
        self.look_again = False
        self.grew_before: Dict[str, bool] = {}  # what grew at the last census (see _grew)
        self.box_bytes: Dict[str, Tuple[float, int]] = {}  # holder -> (items' bytes, step)
        self.stall_of = float("-inf")  # the last step before the phase without steps now
        self.stall_looks = 0  # forced looks taken in it
        self.stall_forced_left = STALL_FORCED_RUN
        self.stall_look_at = float("inf")
        self.had_graphs = False
        self.evidence_left = EVIDENCE_LOOKS
        self._lock = threading.Lock()
        self.next_due = 0.0 if self.enabled else float("inf")
        if self.enabled and self.tm.mode == "always":
            self.tm.begin(0, now)

    # -- entry points (each runs under agent.collect) ------------------------------------

    def on_step(self, step: int, now: float) -> None:
        if not self.enabled or not self._lock.acquire(blocking=False):
            return
        try:
            force = self.forced_left > 0 and step >= self.force_at
            taken = self.forced_total - self.forced_left
            # every census so far, forced or not; those before the first step in part
            spent = self.census_cpu_s - max(0.0, self.prestep_cpu_s - PRESTEP_MAX_S)
            if force and taken >= ALWAYS_FORCED and spent >= FORCED_MAX_S:
                force, self.forced_left = False, 0  # the rest on the budget
            if force:
                self.forced_left -= 1
                later = [s for s in self.force_steps if s > step]
                self.force_at = later[0] if later else step
                self.force_steps = later[1:]
            if force or self.forced_left < self.forced_total:
                self._due(step, now, force=force)
        finally:
            self._lock.release()

    def wants_look(self, values: Dict[str, Any], now: float, stepless: bool = False) -> bool:
        """A dense count of heavy objects (``values``: a cheap sample's) grew by what
        ``_EVIDENCE_COUNTS`` says since the last census: worth a look on evidence.
        ``stepless``: asked from the background thread while no steps come, where the
        fixed-step looks still pending (``forced_left``) will not come either."""
        rss = values.get(wire.RSS)
        if isinstance(rss, int) and rss > self.rss_peak:
            self.rss_peak = rss
        if not self.enabled or self.evidence_left <= 0 or (self.forced_left and not stepless):
            return False
        if now - self.last[0] < EVIDENCE_GAP_S:
            return False
        for key, least, share in _EVIDENCE_COUNTS:
            if _grew_by(self.prev_v.get(key), values.get(key), least, share):
                return True
        least, share = _EVIDENCE_RSS
        return _grew_by(self.rss_before, rss, least, share)

    def look_now(self, step: Optional[int], now: float) -> None:
        """A look on evidence (see ``wants_look``), at this step boundary."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            self.evidence_left -= 1
            self._due(step, now, force=True)
        finally:
            self._lock.release()

    def look_tick(self, now: float) -> None:
        """A look on evidence (see ``wants_look``) from the background thread, while no
        steps come: a program without steps (an RNN chain built in a loop, an evaluation
        script) whose first looks fell in its imports, before anything piled up."""
        if self.enabled and self._program_begun(now):
            self.look_now(None, now)

    def on_tick(self, now: float) -> None:
        """From the background thread, while no steps come: a program that never steps, or
        one whose steps stopped (a phase without an optimizer)."""
        if not self.enabled:
            return
        if self.agent.steps:
            self._on_stall(now)
            return
        # from this thread the main one runs alongside: not while it is still importing
        if not self._program_begun(now):
            return
        if not self._lock.acquire(blocking=False):
            return
        try:
            force = (
                (0 < self.seq < TICK_FORCED or self.look_again)
                and now >= self.tick_forced_at
                and self.tick_spent < TICK_FORCED_MAX_S
            )
            spent = self._due(None, now, force=force)
            self.tick_spent += spent
            if force:
                # 0.5 s, then 1 s, 2 s apart: a long set-up (a model built, data loaded)
                # must not take all of them before the program's loop has begun
                self.tick_forced_at = now + TICK_SECOND_S * 2 ** max(0, self.seq - 1)
        finally:
            self._lock.release()

    def _program_begun(self, now: float) -> bool:
        """Past the process' first ``TICK_AFTER_S`` and no module imported for
        ``IMPORT_QUIET_S``: the program's own work has begun (see ``IMPORT_QUIET_S``)."""
        return now - self.agent.t0 >= TICK_AFTER_S and self.imports.settled(
            threadsafe.IMPORT_QUIET_S
        )

    def stall_due(self, now: float) -> bool:
        """A forced look of a phase without steps is due (whatever ``next_due`` says)."""
        if not self.enabled or not self.agent.steps or self.stall_forced_left <= 0:
            return False
        if self.stall_spent >= STALL_FORCED_MAX_S:
            return False
        last = float(getattr(self.agent, "last_step_t", now))
        if now - last < STALL_LOOK_S:
            return False
        return last != self.stall_of or (
            self.stall_looks < STALL_FORCED and now >= self.stall_look_at
        )

    def _on_stall(self, now: float) -> None:
        last = float(getattr(self.agent, "last_step_t", now))
        if now - last < STALL_LOOK_S:
            return
        if last != self.stall_of:  # a new phase without steps
            self.stall_of, self.stall_looks, self.stall_look_at = last, 0, now
        if not self._lock.acquire(blocking=False):
            return
        try:
            force = (
                self.stall_looks < STALL_FORCED
                and self.stall_forced_left > 0
                and now >= self.stall_look_at
                and self.stall_spent < STALL_FORCED_MAX_S
            )
            self.stall_spent += self._due(None, now, force=force)
            if force:
                self.stall_looks += 1
                self.stall_forced_left -= 1
                self.stall_look_at = now + STALL_SECOND_S
        finally:
            self._lock.release()

    def on_exit(self, step: int, now: float) -> None:
        """Close an open tracemalloc window (where the leak was allocated). No census: the
        program's own code has finished, and what it dropped on the way out is no leak."""
        if not self.enabled or not self._lock.acquire(blocking=False):
            return
        try:
            tm = self.tm.end(step, now) if self.tm.active else None
            if tm is not None:
                t = now - self.agent.t0
                self.agent.emit(
                    {"k": wire.K_CENSUS, "t": t, "step": step or None, "v": {}, "tracemalloc": tm}
                )
        finally:
            self._lock.release()

    # -- scheduling ------------------------------------------------------------------------

    def _due(self, step: Optional[int], now: float, force: bool) -> float:
        """What is due now (a tracemalloc window's end, a census, a poll); returns the CPU
        seconds a forced census took (0 when none was forced)."""
        forced = 0.0
        if self.tm.active and self.tm.mode == "auto" and self.tm.due(step or 0, now):
            with self.agent.interrupts.held():
                result = self._end_window(step, now)
            if result is not None:  # its own line: a census here would cost outside the budget
                self.agent.emit(
                    {
                        "k": wire.K_CENSUS,
                        "t": now - self.agent.t0,
                        "step": step,
                        "v": {},
                        "tracemalloc": result,
                    }
                )
        tracing = self.tm.active and self.tm.mode == "auto"
        if force or (now >= self.census_due and not tracing):  # a census under tracemalloc
            cpu0 = self.census_cpu_s  # (a census under tracemalloc would run many times
            with self.agent.interrupts.held():  # slower)
                self._census(step, now, None)
            if force:
                forced = self.census_cpu_s - cpu0
        elif now >= self.poll_due:
            self._poll(step, now)
        window = now + 0.1 if self.tm.active and self.tm.mode == "auto" else float("inf")
        # until the fixed-step censuses are taken, look at every step (a cheap comparison)
        due = min(self.census_due, self.poll_due, window)
        self.next_due = 0.0 if self.forced_left else due
        return forced

    def _poll(self, step: Optional[int], now: float) -> None:
        t0 = time.perf_counter()
        v = self.tracker.poll()
        if v:
            self.agent.emit({"k": wire.K_SAMPLE, "t": now - self.agent.t0, "step": step, "v": v})
        self.budget.charge("poll", time.perf_counter() - t0, now)
        pollable = self.tracker.pollable()
        self.poll_due = now + self.agent.pace(self.poll_s, now) if pollable else float("inf")

    def _end_window(self, step: Optional[int], now: float) -> Optional[Dict[str, Any]]:
        t0 = time.perf_counter()
        result = self.tm.end(step or 0, now)
        last_t, last_step = self.last
        window_steps = (step or 0) - self.tm.start_step
        cost = time.perf_counter() - t0
        if result is not None and step is not None and last_step and self.tm.start_step > last_step:
            # the window's cost is how much slower its steps ran than the steps before it
            base = (self.tm.start_t - last_t) / max(1, self.tm.start_step - last_step)
            cost += max(0.0, result["seconds"] - window_steps * base)
        self.budget.charge("tracemalloc", cost, now)
        self.tm_allowed = max(self.budget.next_after(now, cost), now + TM_MIN_GAP_S)
        return result


def _grew_by(base: Any, now: Any, least: float, share: float) -> bool:
    """``now`` is above ``base`` by ``least`` and by ``share`` of ``base`` (both numbers)."""
    if not isinstance(base, (int, float)) or not isinstance(now, (int, float)):
        return False
    return now - base >= max(least, share * base)
