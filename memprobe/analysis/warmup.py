"""Warm-up detection from the data: MSER on a linear fit.

MSER (White, 1997, the marginal standard error rule used to truncate the
initial transient of simulation output) picks the truncation point ``d`` that
minimises the standard error of what remains. Here "what remains" is fitted by
a straight line, not a constant, so a steady leak keeps ``d = 0`` (every point
fits the line equally well) while a fast start - lazy optimizer state, a
cache that fills, the allocator growing its arenas - is cut off where the
rest becomes a straight line again.
"""

from __future__ import annotations

import numpy as np

from memprobe.analysis.series import Array

_CANDIDATES = 33  # truncation points tried: 1/64 of the series apart at 0.5
_MIN_TAIL = 6
# the second half's spread about its line this many times the sample-to-sample noise: the
# tail has a shape of its own, not noise (see _clip_scale)
_STRUCTURE = 4.0


def detect_warmup(x: Array, y: Array, max_fraction: float = 0.5) -> int:
    """Index of the first point after the warm-up (0 when there is none)."""
    n = len(y)
    if n < 2 * _MIN_TAIL:
        return 0
    last = int(n * max_fraction)
    ks = np.unique(np.linspace(0, last, min(last + 1, _CANDIDATES)).astype(int))
    # Residuals are clipped at a robust scale so that one heavy spike does not
    # decide the truncation point.
    scale = _clip_scale(x, y) * 4.0
    best_k, best = 0, np.inf
    for k in ks:
        m = n - int(k)
        if m < _MIN_TAIL:
            break
        resid = _line_residuals(x[k:], y[k:])
        if scale > 0:
            resid = np.clip(resid, -scale, scale)
        stat = float(np.dot(resid, resid)) / (m - 2) / m
        # a truncation must improve clearly (10 %): noise alone must not move d
        if k == 0 or stat < best * 0.9:
            best_k, best = int(k), stat
        if best == 0.0:
            break
    return best_k


def _clip_scale(x: Array, y: Array) -> float:
    """The noise scale residuals are clipped at: the sample-to-sample noise, or where the
    second half's own spread about its line is far above it, that spread. A memory reading
    sampled ten times a second moves by a page or two between samples while it creeps by
    megabytes over a plateau; clipped at the step noise, every residual of any window was
    clipped alike and the shortest tail looked no better than the whole run (a population
    model's RSS: 25 -> 126 MiB in 8 s, flat for the 19 s after, and no warm-up found)."""
    noise = _robust_scale(np.diff(y))
    half = len(y) // 2
    spread = _robust_scale(_line_residuals(x[half:], y[half:])) if len(y) - half > 2 else 0.0
    return spread if spread > _STRUCTURE * noise else noise


def _line_residuals(x: Array, y: Array) -> Array:
    xm, ym = x.mean(), y.mean()
    dx = x - xm
    sxx = float(np.dot(dx, dx))
    slope = float(np.dot(dx, y - ym)) / sxx if sxx > 0 else 0.0
    out: Array = y - (ym + slope * dx)
    return out


def _robust_scale(d: Array) -> float:
    if len(d) == 0:
        return 0.0
    mad = float(np.median(np.abs(d - np.median(d))))
    if mad > 0:
        return 1.4826 * mad
    return float(np.std(d))
