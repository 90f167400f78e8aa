"""Many processes under one memprobe run: ingestion rate, parent CPU, lag, nothing dropped.

    python benchmarks/bench_procs.py                        # 16 and 64 processes, 60 s each
    python benchmarks/bench_procs.py --procs 16 --seconds 30 --display plain

The target is ``many_procs.py``: R ranks (rank 0 the main process, the others started with
multiprocessing's spawn) x (1 + W) processes, each rank forking W idle workers; 16 = 4 x 4,
64 = 16 x 4. The parent is memprobe's own launcher, run in this process
(``memprobe.launch.runner.run`` with the live table rendered to /dev/null at 120 columns, live judge
on, or the plain progress lines with ``--display plain``), so that:

- samples/s ingested: sample and census messages taken in by ``RunState.ingest``
  (counted by a wrapper) per second of the run;
- parent CPU: this process' own CPU time over the run (``RUSAGE_SELF``: the launcher's
  polling, tailing, psutil tree sampling, live table and judge; the children excluded), as a
  share of one core; the end (analysis and record) separately;
- lag: for every sample ingested, the wall time at ingestion minus the wall time the agent
  stamped it with (its process' ``wall_t0 + t``): write -> parsed and shown in the state the
  table is drawn from; median, p95, max;
- nothing dropped: after the run, every line of every ``proc-<pid>.jsonl`` is read again
  and each signal's values counted, against what the run state took in (``SeriesBuf.n``,
  samples seen before down-sampling).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from memprobe.bootstrap.memprobe_agent import wire  # noqa: E402
from memprobe.collect.state import RunState  # noqa: E402

SHAPES = {16: (4, 3), 64: (16, 3)}  # processes -> (ranks, workers per rank)


class Probe:
    """Wraps RunState.ingest: counts messages and records the lag of every sample."""

    def __init__(self) -> None:
        self.lags = array("d")
        self.counts: Dict[str, int] = {}
        self.state: Optional[RunState] = None
        self._orig = RunState.ingest

    def install(self) -> None:
        probe = self
        orig = self._orig

        def ingest(state: RunState, pid: int, msg: Dict[str, Any]) -> None:
            orig(state, pid, msg)
            kind = msg.get("k")
            probe.counts[str(kind)] = probe.counts.get(str(kind), 0) + 1
            if kind in (wire.K_SAMPLE, wire.K_CENSUS):
                wall = state.procs[pid].header.get("wall_t0")
                t = msg.get("t")
                if isinstance(wall, float) and isinstance(t, (int, float)):
                    probe.lags.append(time.time() - (wall + t))

        RunState.ingest = ingest  # type: ignore[method-assign,assignment]

    def uninstall(self) -> None:
        RunState.ingest = self._orig  # type: ignore[method-assign]


def file_counts(run_dir: str) -> Dict[int, Dict[str, int]]:
    """pid -> signal -> values written (every sample and census line of its file)."""
    out: Dict[int, Dict[str, int]] = {}
    for pid, path in wire.iter_proc_files(run_dir):
        counts: Dict[str, int] = {}
        msgs, _ = wire.read_file(path)
        for m in msgs:
            if m.get("k") in (wire.K_SAMPLE, wire.K_CENSUS) and isinstance(m.get("v"), dict):
                for name, v in m["v"].items():
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        counts[name] = counts.get(name, 0) + 1
        out[pid] = counts
    return out


def run(procs: int, seconds: float, display_kind: str) -> Dict[str, Any]:
    from rich.console import Console

    from memprobe.analysis import DetectOptions
    from memprobe.commands import run as commands
    from memprobe.launch import rundir, runner
    from memprobe.render import livejudge
    from memprobe.render.live import LiveDisplay, PlainDisplay

    ranks, workers = SHAPES.get(procs, (max(1, procs // 4), 3))
    tmp = tempfile.mkdtemp(prefix="memprobe-procs-")
    out = os.path.join(tmp, "run.json")
    run_dir = rundir.prepare_run_dir(out)
    command = [
        sys.executable,
        str(HERE / "many_procs.py"),
        "--ranks",
        str(ranks),
        "--workers",
        str(workers),
        "--seconds",
        str(seconds),
    ]
    detect = DetectOptions()
    devnull = open(os.devnull, "w")  # noqa: SIM115
    if display_kind == "live":
        console = Console(file=devnull, force_terminal=True, width=120, color_system="truecolor")
        display: Any = LiveDisplay(console, judge=livejudge.make(detect))
    else:
        display = PlainDisplay(quiet=True)
    probe = Probe()
    captured: Dict[str, RunState] = {}
    stop = display.stop

    def keep_state(state: RunState) -> None:
        captured["state"] = state
        stop(state)

    display.stop = keep_state
    probe.install()
    os.environ["OMP_NUM_THREADS"] = "1"
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    try:
        outcome = runner.run(command, rundir.RunOptions(output=out), run_dir, display)
    finally:
        probe.uninstall()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter() - t0
    parent_cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    # the end: analysis and record, as `memprobe run` does it
    t1 = time.perf_counter()
    commands.finish(outcome, out, detect, keep_run_dir=True)
    end_s = time.perf_counter() - t1
    r2 = resource.getrusage(resource.RUSAGE_SELF)
    end_cpu = (r2.ru_utime - r1.ru_utime) + (r2.ru_stime - r1.ru_stime)
    state = captured["state"]
    written = file_counts(run_dir)
    dropped: Dict[str, int] = {}
    values_written = 0
    for pid, counts in written.items():
        p = state.procs.get(pid)
        for name, n in counts.items():
            values_written += n
            buf = p.series.get(name) if p is not None else None
            # samples taken in before any down-sampling (a memprobe before bounded buffers:
            # every sample is still in the list)
            got = 0 if buf is None else getattr(buf, "n", None) or len(buf.value)
            if got != n:
                dropped[f"{pid}:{name}"] = n - got
    lags = sorted(probe.lags)
    agents = sum(1 for p in state.procs.values() if p.has_agent)
    samples = probe.counts.get(wire.K_SAMPLE, 0) + probe.counts.get(wire.K_CENSUS, 0)
    res: Dict[str, Any] = {
        "procs": procs,
        "ranks": ranks,
        "workers_per_rank": workers,
        "display": display_kind,
        "agents": agents,
        "wall_s": wall,
        "samples": samples,
        "samples_per_s": samples / wall,
        "values_written": values_written,
        "dropped": dropped,
        "parent_cpu_share": parent_cpu / wall,
        "lag_median_s": statistics.median(lags) if lags else None,
        "lag_p95_s": lags[int(0.95 * (len(lags) - 1))] if lags else None,
        "lag_max_s": lags[-1] if lags else None,
        "end_s": end_s,
        "end_cpu_s": end_cpu,
        "run_json_bytes": os.path.getsize(out),
        "exit": outcome.exit_code,
    }
    print(
        f"  {procs} procs ({agents} agents, {display_kind}): {samples:,} samples in {wall:.1f} s "
        f"= {res['samples_per_s']:.0f}/s; parent CPU {100 * res['parent_cpu_share']:.1f} % of a "
        f"core; lag median {1000 * (res['lag_median_s'] or 0):.0f} ms, p95 "
        f"{1000 * (res['lag_p95_s'] or 0):.0f} ms, max {1000 * (res['lag_max_s'] or 0):.0f} ms; "
        f"dropped {sum(dropped.values())} of {values_written:,} values; end {end_s:.2f} s; "
        f"run.json {res['run_json_bytes'] / 2**20:.2f} MB",
        file=sys.stderr,
        flush=True,
    )
    return res


def report(results: List[Dict[str, Any]]) -> str:
    lines = [
        "| processes | display | agents | samples/s ingested | parent CPU (% of a core) "
        "| lag median / p95 / max | values dropped | wait at the end | run.json |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['procs']} ({r['ranks']} ranks × {1 + r['workers_per_rank']}) | {r['display']} "
            f"| {r['agents']} | {r['samples_per_s']:.0f} | {100 * r['parent_cpu_share']:.1f} % "
            f"| {1000 * r['lag_median_s']:.0f} / {1000 * r['lag_p95_s']:.0f} / "
            f"{1000 * r['lag_max_s']:.0f} ms | {sum(r['dropped'].values())} of "
            f"{r['values_written']:,} | {r['end_s']:.2f} s | "
            f"{r['run_json_bytes'] / 2**20:.2f} MB |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", nargs="+", type=int, default=[16, 64])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--display", nargs="+", default=["live"], choices=["live", "plain"])
    ap.add_argument("--json", help="also write the raw results here")
    args = ap.parse_args()
    results = [run(n, args.seconds, d) for n in args.procs for d in args.display]
    print(report(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
