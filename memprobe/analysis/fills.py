"""Growth that will stop by itself, held back until it has: a bounded deque or
``functools.lru_cache`` filling up and closed matplotlib figures waiting for the cyclic
collector; and growth that has stopped, a watched container the program let go.

Both rise for hundreds of steps in a correct program, at the pace of a leak, and both are
known to the agent: a deque's ``maxlen`` (an lru_cache's ``maxsize``) and length at each
census, the figures pyplot still holds open at every sample. While nothing else grows (no
object count or container called leak: those accumulate somewhere else and keep their
verdict, the memory with them), the process' memory and heap blocks rising beside such a
fill are not a leak yet.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from memprobe.analysis.chains import sightings
from memprobe.analysis.evidence import TENSOR_COUNT
from memprobe.analysis.series import BLOCKS, container_holder
from memprobe.analysis.verdict import LEAK, NO_LEAK, SignalVerdict

FIGURES_OPEN = "figures:open"
FIGURES = "figures:count"
# counts that accumulate outside a deque's items when they leak: graphs kept, models, arrays
_ELSEWHERE = ("graph:nodes", "graph:largest", "modules:count", "ndarray:count")


@dataclass(frozen=True)
class DequeFill:
    """A bounded deque (``deque(maxlen=N)``) the censuses saw filling: where it stood at the
    last census (``length`` of ``maxlen``) and where on the axis it is full (``full_x``:
    between the last look that saw it short of full and the first that saw it full, at the
    pace it filled at where that is known, else projected at that pace; None when it did
    not gain between two looks). ``scalar``: its items are numbers or small records of
    numbers (an alert log of ``(turbine, t, residual)``), which hold up no memory."""

    holder: str
    maxlen: int
    length: int
    full_x: Optional[float]
    scalar: bool = False


def deque_fills(census: Sequence[Mapping[str, Any]], axis: str) -> List[DequeFill]:
    """Every bounded deque seen short of full at some census, with where it fills up."""
    seen: Dict[str, List[Tuple[float, int, int]]] = {}
    scalar: Dict[str, bool] = {}
    for entry in census:
        x = entry.get("step" if axis == "step" else "t") if isinstance(entry, dict) else None
        boxes = entry.get("containers") if isinstance(entry, dict) else None
        if not isinstance(x, (int, float)) or isinstance(x, bool) or not isinstance(boxes, list):
            continue
        for box in boxes:
            if not isinstance(box, dict) or not isinstance(box.get("holder"), str):
                continue
            length, bound = box.get("len"), box.get("maxlen")
            if isinstance(length, int) and isinstance(bound, int) and bound > 0:
                seen.setdefault(box["holder"], []).append((float(x), length, bound))
                scalar[box["holder"]] = box.get("scalar") is True
    grew = _grown_holders(census)
    return [
        replace(f, scalar=scalar[f.holder])
        for f in (_fill(h, pts) for h, pts in seen.items() if not _inside_one_of(h, grew))
        if f is not None
    ]


def chain_grows(census: Sequence[Mapping[str, Any]], looks: int = 3) -> bool:
    """A chain (type, holder) the censuses found at ``looks`` looks or more, longer at each
    one and at least twice as long at the last as at the first."""
    links: Dict[Tuple[str, str], List[int]] = {}
    for c in sightings(census):
        links.setdefault((str(c.get("type")), c["holder"]), []).append(c["links"])
    return any(
        len(ns) >= looks and all(b > a for a, b in zip(ns, ns[1:])) and ns[-1] >= 2 * ns[0]
        for ns in links.values()
    )


def _grown_holders(census: Sequence[Mapping[str, Any]]) -> List[str]:
    """Holders of containers that the censuses saw longer at a later look than at their
    first one."""
    first: Dict[str, int] = {}
    grown: Dict[str, None] = {}
    for entry in census:
        boxes = entry.get("containers") if isinstance(entry, dict) else None
        for box in boxes if isinstance(boxes, list) else []:
            holder = box.get("holder") if isinstance(box, dict) else None
            length = box.get("len") if isinstance(box, dict) else None
            if isinstance(holder, str) and isinstance(length, int):
                if length > first.setdefault(holder, length):
                    grown[holder] = None
    return list(grown)


def _inside_one_of(holder: str, outer: Sequence[str]) -> bool:
    """The deque hangs below a container that grows (a handler added each epoch, each with
    its own bounded deque): bounded each, unbounded in all; no fill that ends."""
    return any(holder.startswith((o + "[", o + ".")) for o in outer if o != holder)


def _fill(holder: str, pts: List[Tuple[float, int, int]]) -> Optional[DequeFill]:
    short = [p for p in pts if p[1] < p[2]]
    if not short:
        return None  # full at every look: it filled before the first one (the warm-up)
    first, last_short = short[0], short[-1]
    _, length, maxlen = pts[-1]
    gained = last_short[1] - first[1]
    pace = gained / (last_short[0] - first[0]) if last_short[0] > first[0] else 0.0
    full_x = last_short[0] + (maxlen - last_short[1]) / pace if pace > 0 else None
    seen_full = [p[0] for p in pts if p[0] > last_short[0] and p[1] >= p[2]]
    if seen_full:
        full_x = seen_full[0] if full_x is None else min(max(full_x, last_short[0]), seen_full[0])
    return DequeFill(holder, maxlen, length, full_x)


LRU_CACHE = ".<lru_cache>"  # how a holder path ends at a functools.lru_cache's cache


def bounded_kind(holder: str, maxlen: int) -> str:
    """What bounds it, as the user wrote it: ``deque(maxlen=N)`` or ``lru_cache(maxsize=N)``."""
    if holder.endswith(LRU_CACHE):
        return f"an lru_cache(maxsize={maxlen})"
    return f"a deque(maxlen={maxlen})"


def fill_needs(holder: str) -> str:
    """What a verdict held back by a fill needs."""
    what = "cache" if holder.endswith(LRU_CACHE) else "deque"
    return f"the {what} to fill, then no more growth"


def filling_text(holder: str, length: int, maxlen: int) -> str:
    """How a reason says that a bounded deque or lru_cache is still filling."""
    return (
        f"while `{holder}`, {bounded_kind(holder, maxlen)}, fills "
        f"({length} of {maxlen} at the last census): bounded"
    )


def fill_holds_back(
    verdicts: Dict[str, SignalVerdict],
    fills: Sequence[DequeFill],
    judge_from: Callable[[str, float], SignalVerdict],
    census: Sequence[Mapping[str, Any]] = (),
) -> Dict[str, SignalVerdict]:
    """Memory, heap blocks and the tensor count rising while a bounded deque fills (a
    replay buffer): a warm-up that ends where the deque is full. Not while something else
    grows: a container or object type that leaks, or a chain of objects each keeping the
    one before that the ``census`` saw grow at every look (the agent's chains.py; no
    bounded deque explains it: wild_v/leak_online_pricing_spans, abandoned spans linked by
    ``parent``, 8 to 326 over five censuses, beside a quarantine deque still filling).

    A leak of one of them is judged again from where the last deque filled
    (``judge_from(name, x)``: the series from x on). Where that is past the series' end
    (still filling) it is inconclusive, waiting for the fill; once full, the series after
    the fill decides alone. A deque of numbers holds back only the heap blocks: its
    items weigh nothing of the memory."""
    if _grows_elsewhere(verdicts) or chain_grows(census):
        return verdicts
    dated = [(f.full_x, f) for f in fills if f.full_x is not None]
    # the last to fill: of every deque for the heap blocks, of those of objects for the rest
    last = {
        blocks: max(
            ((x, f) for x, f in dated if blocks or not f.scalar),
            key=lambda pair: pair[0],
            default=None,
        )
        for blocks in (True, False)
    }
    out = dict(verdicts)
    for name, v in verdicts.items():
        latest = last[name == BLOCKS]
        if latest is None or not _may_wait(name, v, (TENSOR_COUNT,)):
            continue
        full_x, fill = latest
        end = v.x_end if v.x_end is not None else float("inf")
        again = judge_from(name, full_x) if full_x < end else None
        if again is None:
            out[name] = v.held_back(
                filling_text(fill.holder, fill.length, fill.maxlen), fill_needs(fill.holder)
            )
        elif again.verdict != LEAK:
            where = f"`{fill.holder}`, {bounded_kind(fill.holder, fill.maxlen)}"
            out[name] = replace(again, reason=f"{again.reason}, since {where} filled")
    return out


def closed_figures_hold_back(verdicts: Dict[str, SignalVerdict]) -> Dict[str, SignalVerdict]:
    """Figures that pile up while pyplot holds none more open: closed ones (``plt.close``)
    that live in reference cycles until the collector's next full pass, which may be
    hundreds of steps away (one figure an epoch: a dozen epochs). While their count rises
    (a leak, growth, or only a trend clear of zero: one figure an epoch is under what a
    count needs), it is no leak, nor the memory and heap blocks rising with it: they wait
    for a collection. Once full collections have passed, the count is a sawtooth with no
    trend, and the memory is judged on its own."""
    count, still_open = verdicts.get(FIGURES), verdicts.get(FIGURES_OPEN)
    if count is None or still_open is None:
        return verdicts
    if not _rises(count, 10):
        return verdicts
    is_open = int(still_open.last_value or 0)
    if _rises(still_open, 3) or 2 * is_open >= (count.last_value or 0):
        return verdicts  # figures never closed: pyplot keeps them (the leak)
    why = f"while pyplot holds {is_open} open: closed figures waiting for the cyclic collector"
    out = dict(verdicts)
    if count.verdict == LEAK or count.growing:
        out[FIGURES] = count.held_back(why, "a full collection, and growth past it")
    if _grows_elsewhere(verdicts):
        return out
    alive = int(count.last_value or 0)
    for name, v in verdicts.items():
        if _may_wait(name, v, ()):
            out[name] = v.held_back(f"{why} ({alive} alive)", "a full collection")
    return out


def _rises(v: SignalVerdict, least_n: int) -> bool:
    """Called leak or growing, or only a trend clear of zero (one figure an epoch is under
    what a count needs to count)."""
    return v.verdict == LEAK or v.growing or (v.ci_low > 0 and v.n >= least_n)


def _grows_elsewhere(verdicts: Mapping[str, SignalVerdict]) -> bool:
    return any(
        v.verdict == LEAK and (name.startswith(("objects:", "container:")) or name in _ELSEWHERE)
        for name, v in verdicts.items()
    )


def _may_wait(name: str, v: SignalVerdict, counts: Tuple[str, ...]) -> bool:
    if v.verdict != LEAK or name.startswith("cuda:"):
        return False
    return v.family == "memory" or name == BLOCKS or name in counts


def let_go(
    verdicts: Dict[str, SignalVerdict],
    census: Sequence[Mapping[str, Any]],
    ends: Mapping[str, float],
) -> Dict[str, SignalVerdict]:
    """A watched container that grew, then was let go: its length series (read at every
    cheap sample while the agent found it) ended at ``ends[name]`` (seconds), and a census
    taken after that did not find it again (the agent looks for it by its id among the
    heap's containers and by its path: one freed, or emptied below what is watched, is
    found no more). What it held is no longer held (a float cache converted and dropped
    after its first epoch): its growth is no leak."""
    out = dict(verdicts)
    timed = [c for c in census if isinstance(c.get("t"), (int, float))]
    for name, v in verdicts.items():
        end, holder = ends.get(name), container_holder(name)
        if v.verdict == NO_LEAK or end is None or holder is None:
            continue
        later = [c for c in timed if c["t"] > end]
        seen = any(_lists(c, holder) for c in timed if c["t"] <= end)
        if not seen or not later or any(_lists(c, holder) for c in later):
            continue  # a census found it, then one after its series ended did not
        out[name] = replace(
            v,
            verdict=NO_LEAK,
            growing=False,
            substantial=False,
            steady=False,
            reason=f"{v.reason}, then let go (not found by the census at {later[0]['t']:.1f} s)",
            needed=None,
        )
    return out


def _lists(entry: Mapping[str, Any], holder: str) -> bool:
    boxes = entry.get("containers")
    return isinstance(boxes, list) and any(
        isinstance(b, dict) and b.get("holder") == holder for b in boxes
    )
