"""A census as the expensive collectors take it: the object pass (census.py), the
holders of graphs and containers named, what grew since the last census, the census
message sent and what it says once (``census_sampled``, ``census_truncated``).

``CensusTaker`` holds these steps; ``expensive.Expensive`` inherits them, sets up the
state they read and write, and says when a census is due.

Census message (``k: "census"``): ``v`` holds the scalar signals
(``objects:<type>`` for the growing types only, ``tensors:*``, ``graph:*``,
``ndarray:*``, ``modules:*``, ``figures:count``, ``container:<holder>:len``);
the rest is the payload: ``seq``, ``objects_total``, ``stride``, ``types``,
``growing_types``, ``tensors``, ``graphs``, ``ndarray``, ``modules``, ``figures``,
``containers``, ``chains``, ``proxies`` (managed.py), ``tracemalloc`` (when a window
ended), ``duration_s``, ``truncated``, ``budget``.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Optional, Set, Tuple

from . import arrays, carried, census, chains, graphs, native, referents, roots, threadsafe, wire
from .budget import Budget, target_cost
from .containers import ContainerTracker
from .managed import shared_names
from .tmwindow import TraceWindow
from .typeinfo import ident
from .userroots import CENSUS_SUSPENDED

MAX_WATCHED_TYPES = 12
# a growing type no watched container explains: its instances' referrers are read for a
# keeper (referents.py) at this many censuses at most, then it is left to the counts
KEEPER_TRIES = 3
KEEPER_DELTA = 32  # gained between two censuses: a type worth a heap scan for its keeper
SUSPICIOUS_DELTA = 4  # items gained between two censuses that start a tracemalloc window
# a container the gc does not track is looked for from the roots once it has this many items
UNTRACKED_MIN_LEN = 16
# counts whose growth may open a tracemalloc window (with the containers), and whether
# their growth is heavy on its own: graphs, models and figures are; arrays and plain
# tensors only when a container's items grow by bytes that count
_GROWTH_KEYS = (
    ("tensors:grad_fn_count", True),
    ("graph:nodes", True),
    ("modules:count", True),
    ("figures:count", True),
    ("ndarray:count", False),
    ("tensors:count", False),
)


# Frame objects are made on demand by anything that looks at a stack (the agent's own
# thread check and holder search included) and die with it; on their own they are never
# the leak (a kept traceback shows as the container that keeps it).
INTERPRETER_TYPES = frozenset(["frame"])


class CensusTaker:
    """The census steps of ``expensive.Expensive`` (which sets up this state and runs them
    under its lock)."""

    agent: Any
    budget: Budget
    tracker: ContainerTracker
    tm: TraceWindow
    imports: threadsafe.ImportWatch
    graph_holders: carried.GraphHolders
    max_objects: int
    min_len: int
    deadline_s: float
    poll_s: float
    deferred: int
    seq: int
    forced_left: int
    based: bool
    look_again: bool
    had_graphs: bool
    largest_before: int
    census_due: float
    poll_due: float
    tm_allowed: float
    last: Tuple[float, int]
    rss_before: Optional[int]
    rss_peak: int
    prev_counts: Dict[str, int]
    grown_kinds: Set[str]
    watched_types: Dict[str, int]
    sample_types: List[str]  # growing types to look for a keeper of (referents.py)
    keeper_tries: Dict[str, int]
    prev_v: Dict[str, float]
    grew_before: Dict[str, bool]
    box_bytes: Dict[str, Tuple[float, int]]
    said: Set[Any]
    census_cpu_s: float
    prestep_cpu_s: float

    def stopping(self) -> bool:
        stop = getattr(self.agent, "_stop", None)
        return bool(stop is not None and stop.is_set())

    def _census(self, step: Optional[int], now: float, tm_result: Optional[Dict[str, Any]]) -> None:
        if self.stopping():
            return  # the process is exiting: touch nothing of the target's any more
        # before the threads are checked: the read lets go of the GIL, and from the check to
        # gc.get_objects() no other thread may run (it could start filling a tuple)
        reader = getattr(self.agent, "rss", None)
        rss_before = reader.read() if reader is not None else None
        agent_thread = getattr(self.agent, "thread_ident", None)
        if threadsafe.others_mid_iteration((threading.get_ident(), agent_thread)):
            # another thread may be filling a tuple the census would hold: try again shortly
            self.deferred += 1
            if self.deferred in (1, 100, 10000):
                self.agent.event(
                    "census_deferred",
                    f"census put off {self.deferred} time(s): "
                    "another thread is inside a generator (see threadsafe.py)",
                )
            self.census_due = time.monotonic() + 0.05
            return
        t0, cpu0 = time.perf_counter(), time.thread_time()
        try:
            with threadsafe.collector_paused():
                self._look(step, now, tm_result, rss_before, (t0, cpu0))
        finally:
            CENSUS_SUSPENDED.clear()  # the program's generators: never kept

    def _look(
        self,
        step: Optional[int],
        now: float,
        tm_result: Optional[Dict[str, Any]],
        rss_before: Optional[int],
        began: Tuple[float, float],
    ) -> None:
        t0, cpu0 = began  # perf_counter, thread_time
        if step is not None and not self.based:
            # growth is measured from the first census at a step boundary: what the imports
            # and the set-up built before it is not a leak
            self.based = True
            self.prev_counts, self.tracker = {}, ContainerTracker()
            self.watched_types.clear()
            self.sample_types = []
        # the high-water mark so far (see expensive._EVIDENCE_RSS)
        self.rss_before = max(rss_before or 0, self.rss_peak) or None
        holder_deadline = time.perf_counter() + self.deadline_s / 2
        namer = carried.TensorNamer()
        res = census.take(
            self.max_objects,
            self.min_len,
            self.deadline_s,
            frozenset(self.watched_types),
            lambda ids: namer.name(ids, holder_deadline),
            self.largest_before,
            frozenset(self.sample_types),
        )
        CENSUS_SUSPENDED.extend(res.pop("generators", []))  # roots till it ends
        live = res.pop("live", {})
        v: Dict[str, float] = res["v"]
        payload: Dict[str, Any] = res["payload"]
        counts: Dict[str, int] = payload.pop("_counts")
        largest = (payload.get("tensors") or {}).get("largest")
        if isinstance(largest, dict):
            self.largest_before = int(largest.get("bytes", 0))
        if self.stopping():
            del res
            return
        holder_deadline = time.perf_counter() + self.deadline_s / 4
        t_hold = time.perf_counter()
        self.graph_holders.name(res, v, self.prev_v, payload, holder_deadline)
        namer.classes_of_holders(payload)
        found = native.handles(holder_deadline)
        if found:
            payload["native"] = found
        for obj in roots.untracked_containers(
            max(self.min_len, UNTRACKED_MIN_LEN), holder_deadline
        ):
            res["containers"][ident(obj)] = obj
            res["lengths"][ident(obj)] = len(obj)
        # an array grown under the same holder since the last census (each step a new
        # object: np.concatenate, np.append) is watched like a container of its elements
        before: Dict[int, int] = {}
        for obj, before[ident(obj)] in self.tracker.arrays.grown(
            arrays.big_arrays(holder_deadline)
        ):
            res["containers"][ident(obj)] = obj
            res["lengths"][ident(obj)] = arrays.length(obj)
        # what keeps the instances of a type that grows with no container to show for it
        samples = res.pop("samples", {})
        if samples and time.perf_counter() < holder_deadline:
            for name in samples:
                self.keeper_tries[name] = self.keeper_tries.get(name, 0) + 1
            for obj in referents.keepers(samples, {ident(res), ident(payload), ident(counts)}):
                res["containers"][ident(obj)] = obj
                res["lengths"][ident(obj)] = referents.count(obj)
        samples.clear()
        obj = None
        cv, entries = self.tracker.update(
            res["containers"],
            res["lengths"],
            step,
            holder_deadline,
            {ident(res), ident(v), ident(payload), ident(counts)},
            before,
            importing=not self.imports.settled(threadsafe.IMPORT_QUIET_S),
        )
        del res
        payload["timings"]["holders_s"] = round(time.perf_counter() - t_hold, 4)
        v.update(cv)
        payload["containers"] = entries
        self._types(counts, v, payload)
        growing_names = {g["type"] for g in payload["growing_types"]} | self.grown_kinds
        found = chains.find(growing_names, time.perf_counter() + self.deadline_s / 8)
        if found:
            payload["chains"] = found  # each new one keeps the last (chains.py)
        payload.update(shared_names(time.perf_counter() + self.deadline_s / 8))
        if self.tm.mode == "always" and self.tm.active and tm_result is None:
            tm_result = self.tm.end(step or 0, now)
        if tm_result is not None:
            payload["tracemalloc"] = tm_result
        cost = time.perf_counter() - t0
        # the CPU it took weighs the forced looks (FORCED_MAX_S): a loaded machine stretches
        # a census's wall time two to four times, not the work it does
        cpu = time.thread_time() - cpu0
        self.census_cpu_s += cpu
        if not self.based:  # before the first step
            self.prestep_cpu_s += cpu
        self.budget.charge(
            "census",
            target_cost(cost, cpu, threading.current_thread() is threading.main_thread()),
            now,
        )
        self.seq += 1
        payload["duration_s"] = round(cost, 4)
        payload["cpu_s"] = round(cpu, 4)
        payload["budget"] = self.budget.summary(now)
        self.agent.emit(
            {
                "k": wire.K_CENSUS,
                "t": now - self.agent.t0,
                "step": step,
                "seq": self.seq,
                "v": v,
                **payload,
            }
        )
        self._say(payload)
        self.agent.live.calibrate(live)
        has_graphs = v.get("tensors:grad_fn_count", 0) > 0
        self.look_again = has_graphs and not self.had_graphs
        self.had_graphs = self.had_graphs or has_graphs
        grew = self._grew(v, entries, step)
        if (
            self.tm.mode == "auto"
            and not self.tm.active
            and now >= self.tm_allowed
            and not self.forced_left
            and step is not None
            and self._suspicious(grew)
        ):
            self.tm.begin(step, time.monotonic())
        self.grew_before = grew
        self.prev_v = v
        done = time.monotonic()
        self.last = (done, step or 0)
        self.census_due = self.budget.next_after(done, cost)
        pollable = self.tracker.pollable()
        self.poll_due = done + self.agent.pace(self.poll_s, done) if pollable else float("inf")

    def _types(self, counts: Dict[str, int], v: Dict[str, float], payload: Dict[str, Any]) -> None:
        """``objects:<type>`` for the types that grow most (watched once seen: steady series);
        tensors, modules, arrays and figures have signals of their own (``tensors:count``...)."""
        prev = self.prev_counts
        types = payload.get("types", {})
        kind_types = {name for name, t in types.items() if isinstance(t, dict) and "kind" in t}
        # autograd node wrappers: the graph signals count graphs, and the census' own reads
        # of grad_fn make these wrappers (see graphs.py)
        kind_types.update(graphs.node_type_names())
        growing: List[Dict[str, Any]] = []
        if prev:
            for name, n in counts.items():
                delta = n - prev.get(name, 0)
                if (
                    delta >= SUSPICIOUS_DELTA
                    and not name.startswith("memprobe_agent")
                    and name not in INTERPRETER_TYPES
                    and name not in kind_types
                ):
                    growing.append({"type": name, "count": n, "delta": delta})
            growing.sort(key=lambda g: -g["delta"])
            for g in growing[:5]:
                if len(self.watched_types) < MAX_WATCHED_TYPES:
                    self.watched_types.setdefault(g["type"], self.seq)
        # the program's own subclasses of those kinds (a tensor subclass that records its
        # parents: ``out.sources``) may chain: chains.py looks for them too
        self.grown_kinds = (
            {
                name
                for name in kind_types & set(counts)
                if "." in name
                and not name.startswith(("torch.", "numpy.", "matplotlib."))
                and counts[name] - prev.get(name, 0) >= SUSPICIOUS_DELTA
            }
            if prev
            else set()
        )
        self.prev_counts = counts
        payload["growing_types"] = growing[:10]
        # the fastest growing types that no watched container's items are: look for what
        # keeps them at the next census (a few tries each)
        explained = {t for w in self.tracker.watched.values() for t in w.elem_types}
        self.sample_types = [
            g["type"]
            for g in growing
            if g["delta"] >= KEEPER_DELTA
            and g["type"] not in explained
            and self.keeper_tries.get(g["type"], 0) < KEEPER_TRIES
        ][:2]
        types = payload["types"]
        for name in self.watched_types:
            n = counts.get(name, 0)
            v[f"objects:{name}"] = n
            types.setdefault(name, {"count": n})

    def _grew(
        self, v: Dict[str, float], entries: List[Dict[str, Any]], step: Optional[int]
    ) -> Dict[str, bool]:
        """What grew since the last census, by what -> heavy: the watched containers that
        gained items (heavy when their items' bytes grew by a KiB a step or more), and the
        counts of things that matter (graphs, modules, figures heavy; arrays, tensors not).
        A bounded deque filling up (rich's progress samples, a replay buffer) is left out:
        it stops at its maxlen."""
        out: Dict[str, bool] = {}
        boxes: Dict[str, Tuple[float, int]] = {}
        for e in entries:
            holder, nbytes = e.get("holder"), e.get("bytes")
            if not isinstance(holder, str):
                continue
            if isinstance(nbytes, (int, float)) and step is not None:
                boxes[holder] = (float(nbytes), step)
            if e.get("grew", 0) < SUSPICIOUS_DELTA or e.get("scalar") or e.get("maxlen"):
                continue
            before = self.box_bytes.get(holder)
            heavy = (
                before is not None
                and holder in boxes
                and boxes[holder][1] > before[1]
                and (boxes[holder][0] - before[0]) / (boxes[holder][1] - before[1]) >= 1024
            )
            out["box:" + holder] = heavy
        self.box_bytes = boxes
        for key, heavy in _GROWTH_KEYS:
            if v.get(key, 0) - self.prev_v.get(key, v.get(key, 0)) >= SUSPICIOUS_DELTA:
                out[key] = heavy
        return out

    def _suspicious(self, grew: Dict[str, bool]) -> bool:
        """Worth a tracemalloc window (allocation-heavy code runs several times slower in
        one): something that grew at this census and at the one before, and is heavy there
        (a Hugging Face Trainer's ``log_history`` gains a small dict every few steps, every
        census: a 2.4 s window for nothing)."""
        return any(heavy and key in self.grew_before for key, heavy in grew.items())

    def _say(self, payload: Dict[str, Any]) -> None:
        stride = payload.get("stride", 1)
        if stride > 1 and "sampled" not in self.said:
            self.said.add("sampled")
            self.agent.event(
                "census_sampled",
                f"heap of {payload['objects_total']:,} objects: the census counts "
                f"every {stride}th object (cap {self.max_objects:,}); counts are "
                "estimates",
            )
        graphs_cut = (payload.get("graphs") or {}).get("cut")
        for part in payload.get("truncated", []):
            why = graphs_cut if part == "graphs" and graphs_cut else "deadline"
            if (part, why) in self.said:
                continue
            self.said.add((part, why))
            if why == "wrappers":
                message = (
                    f"autograd graphs not sized: {graphs.MAX_LIVE_WRAPPERS:,} node wrappers "
                    "are alive; walking further would make more, and each one deepens "
                    "torch's teardown of the graph (graph counts stay exact)"
                )
            elif why == "nodes":
                message = f"census graphs cut off after {graphs.MAX_NODES:,} nodes"
            else:
                message = (
                    f"census {part} cut off after {self.deadline_s:g} s; "
                    "its figures are estimates from the part walked"
                )
            self.agent.event("census_truncated", message)
