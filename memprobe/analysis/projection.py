"""When does a leaking process run out of memory: step and seconds at the limit."""

from __future__ import annotations

import re
from typing import Optional

from memprobe.analysis.verdict import SignalVerdict
from memprobe.record import Limits, Projection

# a GPU's memory: its allocator (cuda:N/...), the driver's view (nvml:N/...), tensors on it
_DEVICE = re.compile(r"^(?:cuda:(\d+)/|nvml:(\d+)/|tensors:cuda:(\d+)_bytes$)")

# Signals whose level is itself the memory the limit applies to. Other byte
# signals (tensor bytes, ndarray bytes) are a part of RSS: their growth is
# added to the process' RSS to project.
_PROCESS_RAM = ("rss_bytes", "uss_bytes", "pss_bytes")


def limit_for(signal: str, limits: Limits) -> Optional[int]:
    """The memory limit a byte signal runs into: a GPU's total, else the RAM limit."""
    i = _device_index(signal)
    if i is not None:
        return limits.gpu_bytes[i] if i < len(limits.gpu_bytes) else None
    return limits.ram_bytes


def _device_index(signal: str) -> Optional[int]:
    m = _DEVICE.match(signal)
    index = next((g for g in m.groups() if g is not None), None) if m else None
    return int(index) if index is not None else None


def project_oom(
    signal: str,
    verdict: SignalVerdict,
    limits: Limits,
    ram_level: Optional[float] = None,
) -> Optional[Projection]:
    """``{step, t_s, limit_bytes}`` at which the process reaches its limit, or None.

    ``t_s`` is seconds since the process started, like the series' ``t``.
    ``ram_level`` is the process' current RSS, used for byte signals that are
    only a part of it. Counts are not projected: bytes per object are unknown.
    """
    if verdict.unit != "bytes" or verdict.slope <= 0 or verdict.x_end is None:
        return None
    limit = limit_for(signal, limits)
    if not limit:
        return None
    own = _device_index(signal) is not None or signal in _PROCESS_RAM or not ram_level
    if own:
        # project from the fitted line, not from the last (noisy) sample
        level = verdict.last_value
        if verdict.intercept is not None and verdict.x0 is not None:
            level = verdict.intercept + verdict.slope * (verdict.x_end - verdict.x0)
    else:
        level = ram_level
    if level is None:
        return None
    remaining_x = max(0.0, (limit - level) / verdict.slope)
    x_oom = verdict.x_end + remaining_x
    if verdict.axis == "step":
        step: Optional[int] = int(round(x_oom))
        t_s: Optional[float] = None
        if verdict.steps_per_s and verdict.t_end is not None:
            t_s = verdict.t_end + remaining_x / verdict.steps_per_s
    else:
        step, t_s = None, x_oom
    return {"step": step, "t_s": t_s, "limit_bytes": int(limit)}
