"""Synthetic run records for renderer and diff tests (no `memprobe run` needed).

``make_record`` builds a RunRecord with step-aligned series for one or more
processes, a per-signal analysis summary (ordinary least squares after the
warm-up, as a stand-in for the real analysis) and, for leaking signals, a
finding with a culprit. ``HOSTILE`` strings go into every target-provided slot
when ``hostile=True``.
"""

from __future__ import annotations

import math
import random
from typing import Any, Dict, List, Optional, Sequence, Tuple

from memprobe.record import (
    ExitInfo,
    Finding,
    Limits,
    Process,
    Projection,
    RunRecord,
    Series,
    Signals,
    SignalSummary,
)

HOSTILE_TYPE = "<script>alert(1)</script>"
HOSTILE_HOLDER = "__main__.[bold red]pwned[/].\x1b[31mred\x1b[0m</script><b>x</b>"
HOSTILE_LOCATION = "train`|`.py:42 \x07\x1b]0;title\x07 *md* [link](http://x)"
HOSTILE_ARG = "--name=<img src=x onerror=alert(2)> & `rm -rf` | [red]x[/]"

MIB = 1024 * 1024
STEP_S = 0.05  # seconds per step


def _fit(xs: Sequence[float], ys: Sequence[float]) -> Tuple[float, float, float, float]:
    """OLS slope, intercept at x0 = xs[0], and the slope's standard error; then x0."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs) or 1.0
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    resid = [y - (my + slope * (x - mx)) for x, y in zip(xs, ys)]
    se = math.sqrt(sum(r * r for r in resid) / max(1, n - 2) / sxx)
    x0 = xs[0]
    return slope, my + slope * (x0 - mx), se, x0


def _signal(
    name: str,
    base: float,
    per_step: float,
    noise: float,
    steps: int,
    warmup: int,
    rng: random.Random,
    x_axis: str = "step",
) -> Tuple[Series, SignalSummary]:
    xs = list(range(1, steps + 1))
    ys: List[float] = []
    for s in xs:
        ramp = base * 0.3 * min(1.0, s / warmup) if warmup else 0.0  # warm-up fill
        v = base + ramp + per_step * s + rng.gauss(0.0, noise)
        ys.append(float(round(v)))
    ts = [round(s * STEP_S, 4) for s in xs]
    post = [(x, y) for x, y in zip(xs, ys) if x > warmup]
    slope, intercept, se, x0 = _fit([p[0] for p in post], [p[1] for p in post])
    lo, hi = slope - 3 * se, slope + 3 * se
    floor = 1024.0 if name.endswith("bytes") else 0.1
    verdict = "leak" if lo > 0 and slope > floor else "no_leak"
    summary = SignalSummary(
        verdict=verdict,
        slope_per_step=slope,
        slope_per_s=slope / STEP_S,
        ci_low=lo,
        ci_high=hi,
        confidence=0.99 if verdict == "leak" else 0.9,
        warmup_end_x=float(warmup) if warmup else None,
        n=len(post),
        unit="bytes" if name.endswith("bytes") else "count",
        axis=x_axis,
        x0=x0,
        intercept=intercept,
        reason="sustained growth after warm-up" if verdict == "leak" else "flat after warm-up",
    )
    return Series(step=list(xs), t=ts, value=ys), summary


def _finding(
    pid: int, signal: str, s: SignalSummary, last: float, limit: int, hostile: bool, steps: int
) -> Finding:
    slope = float(s.slope_per_step or 0.0)
    proj: Optional[Projection] = None
    if signal.endswith("bytes") and slope > 0:
        step = int(steps + (limit - last) / slope)
        proj = {"step": step, "t_s": step * STEP_S, "limit_bytes": limit}
    return Finding(
        signal=signal,
        pid=pid,
        verdict="leak",
        slope_per_step=slope,
        slope_per_s=s.slope_per_s,
        unit=s.unit,
        confidence=s.confidence,
        projected_oom=proj,
        culprit={
            "type": HOSTILE_TYPE if hostile else "torch.Tensor",
            "holder": HOSTILE_HOLDER if hostile else "__main__.trainer.actor_losses",
            "location": HOSTILE_LOCATION if hostile else "train.py:42",
            "holds_autograd_graph": True,
        },
        explanation=(
            "trainer.actor_losses (a list) gains one torch.Tensor per step; "
            "each keeps an autograd graph of 37 nodes alive"
        ),
        fix_hint="append loss.item() (or loss.detach()) instead of loss",
        evidence={"growing_type": "torch.Tensor", "per_step": 1, "graph_nodes": 37},
    )


def make_record(
    *,
    leak_bytes_per_step: float = 0.0,
    leak_count_per_step: float = 0.0,
    steps: int = 200,
    warmup: int = 10,
    roles: Sequence[Tuple[str, Optional[int], Optional[int]]] = (("main", None, None),),
    hostile: bool = False,
    x_axis: str = "step",
    seed: int = 0,
    command: Optional[List[str]] = None,
    with_summaries: bool = True,
    limit_bytes: int = 8 * 1024 * MIB,
) -> RunRecord:
    rng = random.Random(seed)
    procs: List[Process] = []
    signals: Signals = {}
    findings: List[Finding] = []
    for i, (role, rank, worker_id) in enumerate(roles):
        pid = 1000 + i
        series: Dict[str, Series] = {}
        sums: Dict[str, SignalSummary] = {}
        specs = (
            ("rss_bytes", 400.0 * MIB, leak_bytes_per_step, 64 * 1024.0),
            ("py_objects", 120_000.0, leak_count_per_step * 40, 3.0),
            ("tensors", 300.0, leak_count_per_step, 0.0),
        )
        for name, base, slope, noise in specs:
            series[name], sums[name] = _signal(name, base, slope, noise, steps, warmup, rng, x_axis)
            if sums[name].verdict == "leak" and name in ("rss_bytes", "tensors"):
                f = _finding(
                    pid, name, sums[name], series[name].value[-1], limit_bytes, hostile, steps
                )
                findings.append(f)
        argv = ["train.py", "--steps", str(steps)] + ([HOSTILE_ARG] if hostile else [])
        procs.append(
            Process(
                pid=pid,
                parent_pid=None if i == 0 else 1000,
                role=role,
                rank=rank,
                worker_id=worker_id,
                argv=argv,
                python="3.11.2",
                started_at=1.7e9,
                ended="exit",
                steps=steps,
                series=series,
            )
        )
        signals[str(pid)] = sums
    verdict = "leak" if findings else "no_leak"
    return RunRecord(
        command=command or ["python", *procs[0].argv],
        cwd="/tmp/\x1b[2Jproj" if hostile else "/tmp/proj",
        started_at=1.7e9,
        duration_s=steps * STEP_S,
        exit=ExitInfo(code=0, signal=None, oom_killed=False),
        limits=Limits(ram_bytes=limit_bytes, ram_source="cgroup", gpu_bytes=[]),
        x_axis=x_axis,
        processes=procs,
        findings=findings,
        verdict=verdict,
        memprobe_version="0.1.0",
        signals=signals if with_summaries else {},
    )


def leaky(**kw: Any) -> RunRecord:
    """The loss-list pattern: +1 tensor/step, +256 KiB/step of RSS."""
    kw.setdefault("leak_bytes_per_step", 256 * 1024.0)
    kw.setdefault("leak_count_per_step", 1.0)
    return make_record(**kw)


def fixed(**kw: Any) -> RunRecord:
    """The same loop fixed: flat after warm-up."""
    return make_record(**kw)
