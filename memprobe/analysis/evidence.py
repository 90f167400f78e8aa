"""What backs what: a signal that leaks on its own, and one that needs another beside it.

A Python-heap count (``objects:*``, ``container:*:len``, ``py_alloc_blocks``) leaks only
with process memory, a heavy-object count or the heap blocks growing with it; a tensor
count only when the tensors are heavy; memory called a leak by the steady-rise test alone
only over a long enough window. Each rule turns a leak it cannot back into inconclusive.
"""

from __future__ import annotations

from dataclasses import replace
from typing import AbstractSet, Callable, Dict, Iterable

from memprobe.analysis.series import BLOCKS, container_holder, family_of
from memprobe.analysis.verdict import INCONCLUSIVE, LEAK, NO_LEAK, SignalVerdict
from memprobe.analysis.wording import fmt_rate

# families whose leak verdict can make the run's verdict "leak"
COUNTED = ("memory", "object", "heap")
# points after its warm-up a memory series needs to back the heap blocks without leaking
# itself: three times what any verdict needs (see _backs)
DENSE_MEMORY = 30
# heap blocks a rise must exceed before memory that merely rose with it backs it: what one
# of CPython's free lists holds at most (2,000 tuples of one size). A gradient-accumulation
# loop grows the blocks +4 a step for ~500 steps, then not at all (+2,100), its gc-tracked
# objects flat all along; a full collection, which empties the free lists, releases them
FREELIST_BLOCKS = 2000.0


# a memory leak by the steady-rise test alone (see verdict.SignalVerdict.steady) stands on its
# own over at least this long a window: shorter, a buffer being filled (a preallocated ring
# buffer touched page by page, a teacher's outputs computed once) rises just as steadily
STEADY_ALONE_STEPS = 1000.0
STEADY_ALONE_S = 30.0


def steady_needs_backing(
    verdicts: Dict[str, SignalVerdict], graph_kept: bool = False, buffer_grew: bool = False
) -> Dict[str, SignalVerdict]:
    """Memory called a leak only because it rises steadily, over a short window (under
    30 s, or under 1,000 steps), with no other signal of the process leaking by the regular
    test or any count of heavy objects growing with it: not a leak yet (the growth still
    keeps the run from "no leak"). A Python-heap count backs it only when it leaks itself:
    heap blocks that rose while a bounded cache filled, then wobbled flat, rise "within
    their noise" over the window. ``graph_kept``: the census saw one autograd graph outlive
    several censuses in a row behind a named tensor (``total_loss += loss``), whose graph
    sizes are rarely counted (the walk is cut short on such chains): that backs it too, as
    does ``buffer_grew``: a buffer the census read rising (an ``io.BytesIO``, a
    ``bytearray``) or a profiler recording throughout (``native.Handle.backs``), memory
    outside Python's objects that no count follows."""
    backed = (
        graph_kept
        or buffer_grew
        or any(
            (v.verdict == LEAK and not v.steady)
            or (v.family == "object" and v.growing)
            or (v.family == "heap" and v.verdict == LEAK)
            for v in verdicts.values()
        )
    )
    if backed:
        return verdicts
    out = dict(verdicts)
    for name, v in verdicts.items():
        if not (v.verdict == LEAK and v.steady and v.family == "memory"):
            continue
        span = (v.x_end or 0.0) - (v.x0 or 0.0)
        # long enough to stand alone: 30 s, and on the step axis 1,000 steps too (an
        # allocator grows its arenas for seconds after a replay deque of fast steps is full)
        seconds = span / v.steps_per_s if v.axis == "step" and v.steps_per_s else span
        if seconds >= STEADY_ALONE_S and (v.axis != "step" or span >= STEADY_ALONE_STEPS):
            continue
        out[name] = replace(
            v,
            verdict=INCONCLUSIVE,
            substantial=True,
            reason=f"{v.reason}, but nothing else grows with it yet",
            needed="a longer rise, or another signal growing with it",
        )
    return out


def counts_items(name: str) -> bool:
    """Counts of things a program accumulates: heavy objects, watched containers and the
    objects the program watches itself (``memprobe.watch``)."""
    return family_of(name) == "object" or name.startswith(
        ("container:", "graph:held_by:", "watch:")
    )


# object counts that say something accumulates (a tensor count alone does not: a program
# builds its model's tensors at start-up, and a few small tensors a step weigh nothing)
_NOT_ACCUMULATION = ("tensors:count", "tensors:cpu_bytes")


def accumulates(verdicts: Dict[str, SignalVerdict], after_steps: bool = False) -> bool:
    return any(
        counts_items(name)
        and (after_steps or name not in _NOT_ACCUMULATION)
        and (v.verdict == LEAK or v.growing)
        for name, v in verdicts.items()
    )


DENSE_INSTANCES = 20  # points of a class's count: every cheap sample, not a census's few


def instances_accumulate(
    names: Iterable[str], points: Callable[[str], int], judge: Callable[[str], SignalVerdict]
) -> bool:
    """A class's live instances, counted at every cheap sample (``objects:<class>`` of a
    heap type, dense where a census's counts have a few points), grew to the end of a
    program without steps that ended: something accumulated there, as when a container
    grows (a sliding window that never lets its papers go: 5,000 more a second for its
    whole 6 s run, RSS +17 MB/s). ``judge`` judges a series on the short span."""
    for name in names:
        if name.startswith("objects:") and points(name) >= DENSE_INSTANCES:
            v = judge(name)
            if v.verdict == LEAK or v.growing:
                return True
    return False


def corroborate(
    verdicts: Dict[str, SignalVerdict], graphs_carried: bool = False, heavy_items: bool = False
) -> Dict[str, SignalVerdict]:
    """Heap-count leaks count only with backing from another signal.

    Backing is a leak or a significant growth above its practical rate (see
    ``SignalVerdict.growing``) of process memory, of heavy-object counts, or of
    ``py_alloc_blocks`` (whose rate threshold is in bytes' worth of blocks).
    A heap leak without it is reported as inconclusive.
    """
    out = dict(verdicts)
    tensors = verdicts.get(TENSOR_COUNT)
    memory = [v for n, v in verdicts.items() if n in _MEMORY_LABELS]  # the process' own
    flat = bool(memory) and all(v.verdict == NO_LEAK for v in memory)
    if (
        tensors is not None
        and tensors.verdict == LEAK
        and not graphs_carried  # the census saw them hold a graph carried across steps
        # a watched container's items grow by bytes that count, unless the process' memory
        # is judged flat over the window: they grew before it (an exemplar memory filled
        # to its budget, then one more small set per class: wild_s/ok_icarl_exemplar_budget)
        and not (heavy_items and not flat)
        and not _heavy_tensors(verdicts)
    ):
        out[TENSOR_COUNT] = tensors = replace(
            tensors,
            verdict=INCONCLUSIVE,
            # backs nothing either; except that a count called a leak by the steady-rise
            # test alone backs what it backed when it was merely growing (ci clear of zero)
            growing=tensors.steady and tensors.growing,
            reason=tensors.reason + ", but they hold no graph and no memory grows with them",
            needed="memory, an autograd graph or tensor bytes growing with it",
        )
    # a tensor count merely growing backs no heap count when the tensors are light and the
    # process' memory is judged flat: a count of tensors in flight that drifts up by a few
    # (an attack's iterates, read at random moments of its loop) is no memory that grows
    light = flat and not (graphs_carried or heavy_items or _heavy_tensors(verdicts))
    for name, v in verdicts.items():
        if v.verdict != LEAK or v.family != "heap":
            continue
        v_out = out
        if heavy_items and name.startswith("container:"):
            continue  # its items grow by bytes that count
        if any(
            _backs(v, name, other, ov)
            for other, ov in v_out.items()
            if other != name and not (light and other == TENSOR_COUNT and ov.verdict != LEAK)
        ):
            continue
        out[name] = replace(
            v,
            verdict=INCONCLUSIVE,
            reason=v.reason + ", but nothing else grows with it",
            needed="another signal growing with it (RSS, Python heap blocks, a census series)",
        )
    return out


TENSOR_COUNT = "tensors:count"


def _heavy_tensors(verdicts: Dict[str, SignalVerdict]) -> bool:
    """A growing tensor count counts on its own when the tensors are heavy: memory grows
    with them, or what they hold (autograd graphs, tensor bytes) does."""
    for name, v in verdicts.items():
        if name == TENSOR_COUNT or not (v.verdict == LEAK or v.growing):
            continue
        if name.startswith(("graph:", "tensors:")):
            return True
        # process memory backs them when it leaks itself: memory merely rising within its
        # noise (an allocator's wobble beside 256 B tensors kept per batch) does not
        if v.family == "memory" and v.verdict == LEAK:
            return True
    return False


def _backs(heap: SignalVerdict, name: str, other: str, v: SignalVerdict) -> bool:
    """Does ``other`` (verdict ``v``) back a heap leak of ``name`` (verdict ``heap``)?
    Memory, heavy objects or heap blocks growing do; so does any leak when ``name`` is the
    heap-blocks counter (the leak says what grows, the blocks say it is not nothing)."""
    if name == BLOCKS and v.verdict == LEAK and v.family in COUNTED:
        return True
    if not (v.verdict == LEAK or v.growing):
        return False
    if v.family == "memory":
        # memory within its own noise backs nothing, except the heap blocks' own clear rise:
        # blocks that climb clear of their band (a handler formatting every line into
        # buffers that pile up) and memory that rose significantly by what counts are two
        # measurements of one growth, when the memory was read at the step boundaries, often
        # (a preload under way before the first step, a worker's few outside reads: no),
        # and the blocks rose by more than a free list holds
        return v.verdict == LEAK or (
            name == BLOCKS
            and v.substantial
            and v.axis == "step"
            and v.n >= DENSE_MEMORY
            and heap.growth > FREELIST_BLOCKS
        )
    return v.family == "object" or other == BLOCKS


def slow_container_with_memory(
    verdicts: Dict[str, SignalVerdict],
    rejudge: Callable[[str], SignalVerdict],
    bounded: AbstractSet[str] = frozenset(),
) -> Dict[str, SignalVerdict]:
    """A watched container that keeps growing, slower than a Python-heap count must to
    count on its own (``min_heap_count_per_step``: one exception kept every third step of a
    retry loop), while the process' memory climbs by what counts, too unevenly to be clear
    of its noise or only steadily over a short window: two measurements of one leak. A
    container's length is exact (no cyclic garbage moves it), so it is judged again at the
    rate that counts for objects (``rejudge``); when that finds it growing clear of its
    noise, the container leaks and the memory with it. Memory that merely wanders, a
    container that stopped, or one with a bound (``bounded``: the holders of
    ``deque(maxlen=N)``, filling up) back nothing."""
    climbing = [
        n
        for n, v in verdicts.items()
        if v.family == "memory"
        and ((v.verdict == INCONCLUSIVE and v.substantial) or (v.verdict == LEAK and v.steady))
    ]
    if not climbing:
        return verdicts
    out = dict(verdicts)
    for name, v in verdicts.items():
        holder = container_holder(name)
        if holder is None or not name.endswith(":len") or holder in bounded:
            continue
        if v.verdict == LEAK or v.ci_low <= 0:
            continue
        again = rejudge(name)
        if again.verdict != LEAK:
            continue
        memory = ", ".join(_MEMORY_LABELS.get(n, n) for n in climbing)
        out[name] = replace(again, reason=f"{again.reason}, and {memory} grows with it")
        for m in climbing:
            if verdicts[m].verdict == LEAK:
                continue  # a steady rise: the container backs it (see steady_needs_backing)
            out[m] = replace(
                verdicts[m],
                verdict=LEAK,
                growing=True,
                confidence=again.confidence,
                reason=f"grows {_rate(verdicts[m])} with a container that keeps growing",
                needed=None,
            )
    return out


_MEMORY_LABELS = {"rss_bytes": "RSS", "uss_bytes": "USS", "pss_bytes": "PSS"}


def _rate(v: SignalVerdict) -> str:
    return fmt_rate(v.unit, "steps" if v.axis == "step" else "seconds")(v.slope)
