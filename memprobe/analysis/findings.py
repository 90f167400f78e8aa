"""Findings: a one-line explanation a person understands, and a fix hint by pattern."""

from __future__ import annotations

from typing import List, Optional, Tuple

from memprobe.analysis.hints import (
    HINT_CONTAINER,
    HINT_DETACH,
    HINT_FIGURE,
    HINT_FRAGMENTATION,
    HINT_GC_FREEZE,
    HINT_HEAP,
    HINT_ITEM,
    HINT_MODULE,
    HINT_NUMPY,
    HINT_PROCESSES,
    HINT_WORKER,
)
from memprobe.analysis.series import TREE_USS
from memprobe.analysis.verdict import LEAK, NO_LEAK, SignalVerdict
from memprobe.analysis.wording import fmt_bytes
from memprobe.record import Evidence, Finding, Projection

# (name prefix or exact name, what grows, hint); first match wins
_PATTERNS: List[Tuple[str, str, Optional[str]]] = [
    (
        TREE_USS,
        "unique memory of the process tree (the main process and its workers)",
        HINT_PROCESSES,
    ),
    ("tensors:grad_fn_count", "tensors that hold an autograd graph", HINT_ITEM),
    ("graph:roots", "live autograd graphs", HINT_ITEM),
    ("graph:largest", "the largest live autograd graph (nodes)", HINT_DETACH),
    ("graph:nodes", "autograd graph nodes kept alive", HINT_DETACH),
    ("tensors:", "live tensors", HINT_ITEM),
    ("modules:", "nn.Module instances and their parameters", HINT_MODULE),
    ("figures:", "open matplotlib figures", HINT_FIGURE),
    ("ndarray:", "NumPy arrays", HINT_NUMPY),
    ("watch:", "a watched object", HINT_CONTAINER),
    ("container:", "a container's length", HINT_CONTAINER),
    ("objects:", "live objects of one type", HINT_HEAP),
    ("gc:frozen", "objects gc.freeze() moved out of the collector's reach", HINT_GC_FREEZE),
    ("py_alloc_blocks", "Python heap blocks", HINT_HEAP),
    ("gc_tracked_objects", "gc-tracked Python objects", HINT_HEAP),
    ("cuda:", "GPU memory held by tensors", HINT_ITEM),
    ("rss_bytes", "resident memory (RSS)", None),
    ("uss_bytes", "unique memory (USS)", None),
    ("pss_bytes", "proportional memory (PSS)", None),
]


def describe(signal: str) -> Tuple[str, Optional[str]]:
    """What a signal's growth means, and the usual fix, for any signal name."""
    if signal.startswith("nvml:"):  # the driver's count (NVML), read from outside
        device, _, what = signal[len("nvml:") :].partition("/")
        if what == "device_used_bytes":
            return f"memory used on GPU {device} (every process on it)", None
        return f"GPU {device} memory the driver counts for this process", None
    for key, what, hint in _PATTERNS:
        if signal == key or (key.endswith(":") and signal.startswith(key)):
            if key == "watch:":
                name, _, what = signal[len(key) :].rpartition(":")
                return f"watched `{name}`" + ("'s length" if what == "len" else ""), hint
            if key == "container:":
                holder = signal[len(key) :].rsplit(":", 1)[0]
                return f"`{holder}`'s length", hint
            if key == "objects:":
                return f"live `{signal[len(key) :]}` objects", hint
            return what, hint
    return f"`{signal}`", None


def rate_text(v: SignalVerdict) -> str:
    """'+2.1 MiB/step (+126 MiB/min)' or '+1/step (+340/min)'."""
    text = rate_text_of(v.slope_per_step, v.slope_per_s, v.unit)
    return text or _num(v.slope, v.unit) + "/" + ("step" if v.axis == "step" else "s")


def rate_text_of(per_step: Optional[float], per_s: Optional[float], unit: str) -> str:
    """The same from a finding's two rates ('' when it has neither)."""
    parts = []
    if per_step is not None:
        parts.append(_num(per_step, unit) + "/step")
    if per_s is not None:
        per_min = _num(per_s * 60.0, unit) + "/min"
        parts.append(f"({per_min})" if parts else per_min)
    return " ".join(parts)


def _num(v: float, unit: str) -> str:
    if unit == "bytes":
        return fmt_bytes(v, signed=True)
    return f"{v:+,.3g}" if abs(v) < 1000 else f"{v:+,.0f}"


def projection_text(proj: Optional[Projection]) -> str:
    if not proj:
        return ""
    limit = fmt_bytes(float(proj["limit_bytes"]))
    where = []
    if proj.get("step") is not None:
        where.append(f"≈ step {proj['step']:,}")
    t_s = proj.get("t_s")
    if t_s is not None:
        where.append(f"≈ {_duration(float(t_s))} into the run")
    return f"; at this rate it reaches the {limit} limit at " + (", ".join(where) or "some point")


def _duration(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 2 * 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} days"


def leak_finding(
    pid: Optional[int],
    signal: str,
    v: SignalVerdict,
    projection: Optional[Projection],
    role: str = "main",
    related: Optional[List[str]] = None,
) -> Finding:
    """A leak finding; the culprit is left for the census analysis to fill."""
    what, hint = describe(signal)
    if (
        signal in ("uss_bytes", "pss_bytes")
        and role == "worker"
        and "rss_bytes" not in (related or [])
    ):
        # private memory climbing while RSS does not: shared pages turning private, the
        # copy-on-access of a Python-object dataset, not memory the worker allocates
        hint = HINT_WORKER
    if hint is None and related:
        hint = describe(related[0])[1]
    after = " after the warm-up" if v.warmup_end_x is not None else ""
    floor = " (the floor of its sawtooth)" if v.floor else ""
    text = f"{what[0].upper()}{what[1:]} grows{floor} by {rate_text(v)}{after}"
    text += projection_text(projection) + "."
    return Finding(
        signal=signal,
        pid=pid,
        verdict=LEAK,
        slope_per_step=v.slope_per_step,
        slope_per_s=v.slope_per_s,
        unit=v.unit,
        confidence=v.confidence,
        projected_oom=projection,
        culprit=None,
        explanation=text,
        fix_hint=hint,
        evidence=evidence(v, related),
        kind="leak",
    )


def fragmentation_finding(
    pid: Optional[int], reserved_signal: str, reserved: SignalVerdict, allocated: SignalVerdict
) -> Finding:
    """CUDA reserved grows while allocated is flat: fragmentation, not a leak."""
    text = (
        f"The CUDA caching allocator's reserved memory grows by {rate_text(reserved)} while "
        f"memory allocated to tensors stays flat: fragmentation, not a leak."
    )
    ev = evidence(reserved, None)
    ev["allocated"] = allocated.summary().to_json()
    return Finding(
        signal=reserved_signal,
        pid=pid,
        verdict=NO_LEAK,
        slope_per_step=reserved.slope_per_step,
        slope_per_s=reserved.slope_per_s,
        unit="bytes",
        confidence=reserved.confidence,
        explanation=text,
        fix_hint=HINT_FRAGMENTATION,
        evidence=ev,
        kind="fragmentation",
    )


def evidence(v: SignalVerdict, related: Optional[List[str]]) -> Evidence:
    ev: Evidence = {
        "axis": v.axis,
        "n": v.n,
        "window": [v.x0, v.x_end],
        "warmup_end_x": v.warmup_end_x,
        "ci": [v.ci_low, v.ci_high],
        "p_value": v.p_value,
        "autocorrelation_inflation": v.inflation,
        "growth": v.growth,
        "sawtooth_floor": v.floor,
        "reason": v.reason,
        "t_end": v.t_end,
        "last_value": v.last_value,
    }
    if related:
        ev["related_signals"] = list(related)
    return ev
