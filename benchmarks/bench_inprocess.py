"""Cost of memprobe.track() on a loop and of the pytest plugin per test and per repetition.

    OMP_NUM_THREADS=1 python benchmarks/bench_inprocess.py [--torch]

track(): the same loop (a small torch training step with --torch, else Python work of
about a millisecond) timed plainly and inside ``track()`` with the defaults, in
interleaved rounds; the loop's wall time is compared, and the judging after the block is
given apart. Plugin: ``pytest_plugin.repeat`` on a trivial test at 30 and 60 repetitions
(the difference is the per-repetition cost) next to plain calls.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any, Callable, Dict, List

import memprobe
from memprobe.pytest_plugin import Limits, repeat

STEPS = 2000
ROUNDS = 3


def _python_step() -> None:
    rows: List[Dict[str, Any]] = [{"i": i, "v": [i] * 4} for i in range(2000)]
    sum(len(r["v"]) for r in rows)


def _torch_step() -> Callable[[], None]:
    import torch

    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(512, 64), torch.randn(512, 1)

    def step() -> None:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()  # type: ignore[no-untyped-call]
        opt.step()

    return step


def _loop(step: Callable[[], None], mark: bool, cpu: List[float]) -> float:
    """Wall seconds of the loop; the process' CPU seconds (every thread's, the agent's
    included: steadier than wall time on a shared machine) appended to ``cpu``."""
    t, c = time.perf_counter(), time.process_time()
    for _ in range(STEPS):
        step()
        if mark:
            memprobe.step()
    cpu.append(time.process_time() - c)
    return time.perf_counter() - t


def bench_track(step: Callable[[], None], mark: bool) -> None:
    plain: List[float] = []
    tracked: List[float] = []
    judge: List[float] = []
    cpu_plain: List[float] = []
    cpu_tracked: List[float] = []
    for _ in range(ROUNDS):
        plain.append(_loop(step, mark, cpu_plain))
        with memprobe.track() as run:
            tracked.append(_loop(step, mark, cpu_tracked))
            t1 = time.perf_counter()
        judge.append(time.perf_counter() - t1)
        assert run.record is not None
    p, t = statistics.median(plain), statistics.median(tracked)
    ratios = sorted(b / a for a, b in zip(plain, tracked))
    print(
        f"track(): {STEPS} steps plain {p:.3f} s, tracked {t:.3f} s "
        f"(x{t / p:.3f}; per-round ratios {', '.join(f'{r:.3f}' for r in ratios)}); "
        f"per step +{(t - p) / STEPS * 1e6:.0f} us; judging after the block "
        f"{statistics.median(judge):.3f} s (median of {ROUNDS}); verdict {run.verdict}; "
        f"CPU {statistics.median(cpu_plain):.3f} s -> {statistics.median(cpu_tracked):.3f} s "
        f"(x{statistics.median(cpu_tracked) / statistics.median(cpu_plain):.3f})"
    )


def bench_plugin() -> None:
    def trivial() -> None:
        sum(range(100))

    def timed(reps: int) -> float:
        t = time.perf_counter()
        assert repeat(trivial, {}, Limits(repetitions=reps, warmup=3)) is None
        return time.perf_counter() - t

    t30 = min(timed(30) for _ in range(ROUNDS + 2))
    t230 = min(timed(230) for _ in range(ROUNDS + 2))
    t = time.perf_counter()
    for _ in range(230):
        trivial()
    plain = (time.perf_counter() - t) / 230
    per_rep = (t230 - t30) / 200 - plain
    print(
        f"plugin: a trivial test, 3 warm-up + 30 repetitions {t30:.3f} s, + 230: {t230:.3f} s "
        f"(best of {ROUNDS + 2}); per repetition +{per_rep * 1e6:.0f} us over a plain call; "
        f"fixed per test {t30 - 30 * (per_rep + plain):.3f} s (gc.collect, agent start/stop, "
        "4 censuses, judging)"
    )


def main(argv: List[str]) -> None:
    step: Any = _python_step
    if "--torch" in argv:
        step = _torch_step()
    import gc

    print(f"python {sys.version.split()[0]}, gc objects {len(gc.get_objects()):,}, "
          f"torch {'torch' in sys.modules}")  # fmt: skip
    bench_track(step, mark="--torch" not in argv)
    bench_plugin()


if __name__ == "__main__":
    main(sys.argv[1:])
