"""What the censuses say grows: tensor storage, the items of watched containers, and bounded
deques filling up. Censuses are seconds apart, so none of these makes a verdict of its own
from its few points; each backs (or explains away) the dense series that judge_process
judged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from memprobe.analysis.evidence import TENSOR_COUNT
from memprobe.analysis.fills import fill_needs, filling_text
from memprobe.analysis.options import DetectOptions
from memprobe.analysis.series import BLOCKS, Prepared
from memprobe.analysis.verdict import INCONCLUSIVE, LEAK, SignalVerdict


def deque_bounds(census: Sequence[Mapping[str, Any]]) -> Dict[str, Tuple[str, int, int]]:
    """Item types the last census found inside a bounded deque (``deque(maxlen=N)``) or
    ``lru_cache(maxsize=N)``:
    type -> (holder, length, maxlen). Items of a replay buffer fill it, then each new one
    pushes the oldest out."""
    out: Dict[str, Tuple[str, int, int]] = {}
    for entry in census:
        boxes = entry.get("containers") if isinstance(entry, dict) else None
        for box in boxes if isinstance(boxes, list) else []:
            if not isinstance(box, dict):
                continue
            holder, length, bound = box.get("holder"), box.get("len"), box.get("maxlen")
            types = box.get("elem_types")
            if not (isinstance(holder, str) and isinstance(types, list)):
                continue
            if not (isinstance(length, int) and isinstance(bound, int) and bound > 0):
                continue
            for t in types:
                if isinstance(t, str):
                    out[t] = (holder, length, bound)
    return out


def bounded_fill(
    verdicts: Dict[str, SignalVerdict], bounds: Mapping[str, Tuple[str, int, int]]
) -> Dict[str, SignalVerdict]:
    """Counts explained by a bounded deque filling up: not a leak yet, and they back nothing.

    The live count of the deque's item type, when it grows by no more than the deque can
    take; and while the deque is still filling, the tensors and heap blocks those items
    bring along (a few per item: a transition's observations). Growth beyond that means the
    objects accumulate somewhere else too: the verdict stands.
    """
    out = dict(verdicts)
    filling = [b for b in bounds.values() if b[1] < b[2]]
    for name, v in verdicts.items():
        if not (v.verdict == LEAK or v.growing):
            continue
        if name.startswith("objects:"):
            bound = bounds.get(name[len("objects:") :])
            per_item = 1
        elif name in (TENSOR_COUNT, BLOCKS) and filling:
            bound = max(filling, key=lambda b: b[2])
            per_item = _ITEM_PARTS if name == TENSOR_COUNT else _ITEM_BLOCKS
        else:
            continue
        if bound is None or v.growth > per_item * (1.2 * bound[2] + 16):
            continue
        holder, length, maxlen = bound
        out[name] = v.held_back(filling_text(holder, length, maxlen), fill_needs(holder))
    return out


# what one item of a bounded deque may bring along: tensors (a transition's state, next
# state, action, reward) and heap blocks (its tuple, numbers, small containers)
_ITEM_PARTS = 4
_ITEM_BLOCKS = 16


def items_bytes_rate(
    census: Sequence[Mapping[str, Any]],
    axis: str,
    lengths: Optional[Mapping[str, Prepared]] = None,
    objects_only: bool = False,
) -> Tuple[float, float]:
    """The fastest growth, in bytes per step (per second without steps), of what a watched
    container's items hold, as the agent measured them at each census, and the most any
    container's items grew in all: memory evidence of its own when the process' memory
    series are too short to say.

    With the container's dense length series (``lengths``: prepared series by name) the
    bytes an item holds at the last census, times the items gained since the first census
    that measured it, count too: censuses are seconds apart, its length is read at every
    cheap sample, so a slow leak of heavy items (a replay list of tensors never trimmed)
    counts as soon as its items add up, not at the next census. ``axis="time"`` on a
    process with steps gives bytes per second (the dense lengths' own clock), and
    ``objects_only`` leaves out containers of plain numbers (a loss history of floats)."""
    first: Dict[str, Tuple[float, float, float]] = {}
    per_item: Dict[str, float] = {}
    best = 0.0
    grown = 0.0
    for entry in census:
        if not isinstance(entry, dict):
            continue
        x = entry.get("step") if axis == "step" else entry.get("t")
        if not isinstance(x, (int, float)) or isinstance(x, bool):
            continue
        for box in entry.get("containers") or []:
            if not isinstance(box, dict) or not isinstance(box.get("holder"), str):
                continue
            if objects_only and box.get("scalar"):
                continue
            nbytes, length = box.get("bytes"), box.get("len")
            if not isinstance(nbytes, (int, float)) or isinstance(nbytes, bool):
                continue
            n = float(length) if isinstance(length, int) and not isinstance(length, bool) else 0.0
            if n > 0:
                per_item[box["holder"]] = float(nbytes) / n
            x0, b0, _ = first.setdefault(box["holder"], (float(x), float(nbytes), n))
            if x > x0:
                best = max(best, (float(nbytes) - b0) / (float(x) - x0))
                grown = max(grown, float(nbytes) - b0)
    for holder, (x0, _, n0) in first.items():
        prep = (lengths or {}).get(f"container:{holder}:len")
        each = per_item.get(holder)
        if prep is None or not each or len(prep.x) < 2 or n0 <= 0:
            continue
        xs = prep.t if axis == "time" and prep.axis == "step" else prep.x
        x_end, n_end = float(xs[-1]), float(prep.y[-1])
        if x_end > x0 and n_end > n0:
            gained = (n_end - n0) * each
            best = max(best, gained / (x_end - x0))
            grown = max(grown, gained)
    return best, grown


def backed_by_tensor_bytes(
    verdicts: Dict[str, SignalVerdict], climb: float, options: DetectOptions
) -> Dict[str, SignalVerdict]:
    """Process memory that rises significantly at a rate that counts, while the tensors'
    bytes climbed at every one of the last censuses at a comparable rate (a quarter of it
    or more), is a leak even when its allocator makes it too ragged to be clear of its own
    noise: two independent measurements agree."""
    out = dict(verdicts)
    for name, v in verdicts.items():
        if v.family != "memory" or v.verdict != INCONCLUSIVE or name.startswith("cuda:"):
            continue
        if not (v.ci_low > 0 and v.slope >= options.rate_threshold(v.unit, v.axis, v.family)):
            continue
        if climb < 0.25 * v.slope:
            continue
        out[name] = replace(
            v,
            verdict=LEAK,
            confidence=max(v.confidence, 0.9),
            substantial=True,
            growing=True,
            reason=f"{v.reason.split(' (')[0].replace('not clear of its noise', 'grows')} "
            "with the tensors' bytes climbing at every census",
            needed=None,
        )
    return out


def even_tensor_climb(
    verdicts: Dict[str, SignalVerdict],
    census: Sequence[Mapping[str, Any]],
    axis: str,
    min_growth: float,
) -> Dict[str, SignalVerdict]:
    """Tensor bytes that climbed at every one of the last four censuses at an even pace
    (each rise within a factor of two of the others per step, though the censuses are
    spaced 5, 25, 100, 400 steps apart) by four times what counts: a leak on their own,
    however few the censuses. A filling cache slows down between far-apart censuses,
    a warm-up stops; linear growth over two orders of magnitude of steps does neither.
    Judged per device: each device's series (``tensors:cpu_bytes``, ``tensors:cuda:0_bytes``)
    on that device's bytes."""
    out = verdicts
    for device in _devices(census):
        out = _even_climb(out, census, axis, min_growth, device)
    return out


def _even_climb(
    verdicts: Dict[str, SignalVerdict],
    census: Sequence[Mapping[str, Any]],
    axis: str,
    min_growth: float,
    device: str,
) -> Dict[str, SignalVerdict]:
    name = f"tensors:{device}_bytes"
    v = verdicts.get(name)
    pts = _tensor_bytes(census, axis, device)
    if v is None or v.verdict != INCONCLUSIVE or len(pts) < 5:
        return verdicts
    last = pts[-5:]
    rates = _rising_rates(last)
    grown = last[-1][1] - last[0][1]
    if not rates or min(rates) < 0.5 * max(rates) or grown < 4 * min_growth:
        return verdicts
    rate = _overall_rate(last)
    per_s = _overall_rate(_tensor_bytes(census, "time", device)[-5:]) or None
    out = dict(verdicts)
    out[name] = replace(
        v,
        verdict=LEAK,
        slope=rate,
        slope_per_step=rate if axis == "step" else None,
        slope_per_s=per_s if axis == "step" else rate,
        ci_low=min(rates),
        ci_high=max(rates),
        confidence=0.95,
        growth=grown,
        growing=True,
        substantial=True,
        last_value=last[-1][1],
        x0=last[0][0],
        x_end=last[-1][0],
        intercept=last[0][1],
        reason=f"climbs at an even pace at each of the last {len(rates)} censuses",
        needed=None,
    )
    return out


# the censuses whose tensor bytes climbed back memory only where the last of them came in
# the last third of the process' samples: a window filling over the first half of a run
# climbs at every census taken while it fills, and says nothing of the flat half after it
CLIMB_LATE = 2.0 / 3.0


def tensor_bytes_rate(
    census: Sequence[Mapping[str, Any]],
    axis: str,
    min_growth: float,
    spans: Sequence[Tuple[float, float]] = (),
) -> float:
    """The tensors' bytes per step (per second without steps) from the first to the last
    census, when they climbed at each of the last three (``_climbs``) and, given the
    process' samples (``spans``: each series' first and last x), the last of those
    censuses came in their last third; else 0."""
    pts = _tensor_bytes(census, axis)
    if spans and pts:
        first, end = min(a for a, _ in spans), max(b for _, b in spans)
        if pts[-1][0] < first + CLIMB_LATE * (end - first):
            return 0.0
    return _overall_rate(pts) if _climbs(pts, min_growth) else 0.0


def _overall_rate(pts: List[Tuple[float, float]]) -> float:
    """From the first point to the last, per unit of x; 0 without a span."""
    if len(pts) < 2 or pts[-1][0] <= pts[0][0]:
        return 0.0
    return (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])


def _rising_rates(pts: List[Tuple[float, float]]) -> List[float]:
    """The rate of each rise between consecutive points; [] unless every one rises."""
    if not all(b[1] > a[1] and b[0] > a[0] for a, b in zip(pts, pts[1:])):
        return []
    return [(b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(pts, pts[1:])]


def _x(entry: Any, key: str) -> Optional[float]:
    v = entry.get(key) if isinstance(entry, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _devices(census: Sequence[Mapping[str, Any]]) -> List[str]:
    """The devices whose tensors' bytes the censuses counted, in the order first seen."""
    seen: Dict[str, None] = {}
    for entry in census:
        tensors = entry.get("tensors") if isinstance(entry, dict) else None
        by_device = tensors.get("bytes_by_device") if isinstance(tensors, dict) else None
        if isinstance(by_device, dict):
            seen.update((str(d), None) for d in by_device)
    return list(seen)


def _tensor_bytes(
    census: Sequence[Mapping[str, Any]], axis: str, device: Optional[str] = None
) -> List[Tuple[float, float]]:
    """(x, bytes) of the tensors at each census: on ``device`` only, else on all devices."""
    pts: List[Tuple[float, float]] = []
    for entry in census:
        tensors = entry.get("tensors") if isinstance(entry, dict) else None
        by_device = tensors.get("bytes_by_device") if isinstance(tensors, dict) else None
        x = _x(entry, "step" if axis == "step" else "t")
        if not isinstance(by_device, dict) or x is None:
            continue
        total = sum(
            float(b)
            for d, b in by_device.items()
            if isinstance(b, (int, float))
            and not isinstance(b, bool)
            and (device is None or d == device)
        )
        pts.append((x, total))
    return pts


def _climbs(pts: List[Tuple[float, float]], min_growth: float) -> bool:
    """The tensors' bytes rose at each of the last three censuses, by at least
    ``min_growth`` and a tenth in all, and not slowing to a stop (the last rise at half the
    rate of the one before or more: a cache that fills slows down, a leak keeps its pace).
    Tensor storage accumulates even when the tensor count does not (a memory bank grown
    with ``torch.cat``, one tensor that gets longer). A few censuses cannot make a verdict
    of their own; they tell memory that rises with them from an allocator's random walk."""
    rates = _rising_rates(pts[-4:]) if len(pts) >= 4 else []
    if not rates:
        return False
    grown = pts[-1][1] - pts[0][1]
    return (
        rates[-1] >= 0.5 * rates[-2] and grown >= min_growth and grown >= 0.1 * max(pts[0][1], 1.0)
    )


def carried_in_census(census: Sequence[Mapping[str, Any]], min_kept: int = 1) -> bool:
    """The agent saw an earlier census' graph still alive behind a named tensor, at
    ``min_kept`` censuses in a row or more (``kept``: how many censuses in a row the old
    root outlived)."""
    for entry in census:
        graphs = entry.get("graphs") if isinstance(entry, dict) else None
        carried = graphs.get("carried") if isinstance(graphs, dict) else None
        for c in carried if isinstance(carried, list) else []:
            kept = c.get("kept", 1) if isinstance(c, dict) else 1
            if isinstance(kept, int) and kept >= min_kept:
                return True
    return False
