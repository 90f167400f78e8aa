"""memprobe's overhead on CPU training loops, and the census cost against heap size.

    OMP_NUM_THREADS=1 python benchmarks/bench_overhead.py               # everything
    python benchmarks/bench_overhead.py --pairs 5 --seconds 60 --sizes large
    python benchmarks/bench_overhead.py --no-loops --heap 1e5,1e6,5e6   # census only

Overhead: the same script (``train_loop.py``, a ~3 ms and a ~50 ms step on
an idle core) run plainly and under ``memprobe run`` at default settings (all
collectors on, ``--tracemalloc auto``, ``--budget 0.03``), interleaved
(plain, memprobe, memprobe, plain, ...) so drift in the machine's load hits
both alike. Reported: the medians of the training loop's own time (what the
agent adds to training) and of the whole command's wall time (memprobe's
start-up and final analysis included), their ratios, the ratio of the
loop's CPU time (process time of every thread of the target: the agent's
work included, other processes' load excluded, so it stays meaningful on a
busy machine), the same for the loop's second half alone (the steady state,
past the start-up censuses at steps 5 and 25 and the 20 s at the full
budget), and the agent's own account of what its collectors spent.

Census cost: a fresh interpreter with torch imported and N extra live
objects; the agent's census (the same code a run uses) is timed twice, the
second time after a container grew, so the holder search is included.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

HERE = Path(__file__).resolve().parent
METRICS = ("loop_s", "loop_cpu_s", "tail_s", "tail_cpu_s")  # what train_loop.py reports
LOOP = HERE / "train_loop.py"


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = "1"
    env.pop("MEMPROBE_CONFIG", None)
    return env


def _run(cmd: List[str]) -> Tuple[float, Dict[str, Any]]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("{"))
    return wall, json.loads(line)


def _agent_account(record_path: str) -> Dict[str, Any]:
    with open(record_path) as f:
        record = json.load(f)
    main = next(p for p in record["processes"] if p["role"] == "main")
    full = [c for c in main["census"] if "types" in c]
    last = full[-1] if full else {}
    return {
        "censuses": len(full),
        "census_s": sum(c.get("duration_s", 0.0) for c in full),
        "windows": sum(1 for c in main["census"] if c.get("tracemalloc")),
        "share": (last.get("budget") or {}).get("share"),
        "verdict": record["verdict"],
    }


def bench_loop(size: str, pairs: int, seconds: float, steps: int = 0) -> Dict[str, Any]:
    py = sys.executable
    if not steps:  # calibrate on a short plain run (on a busy machine, fix --steps instead)
        _, probe = _run([py, str(LOOP), "--size", size, "--steps", "30"])
        steps = max(50, int(seconds / (probe["step_ms"] / 1000.0)))
    rows: Dict[str, List[Dict[str, float]]] = {"plain": [], "memprobe": []}
    accounts = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        plain = [py, str(LOOP), "--size", size, "--steps", str(steps)]
        probed = [py, "-m", "memprobe", "run", "--no-live", "-o", out, *plain[1:]]
        for i in range(pairs):
            order = ["plain", "memprobe"] if i % 2 == 0 else ["memprobe", "plain"]
            for kind in order:
                wall, res = _run(plain if kind == "plain" else probed)
                rows[kind].append({"wall_s": wall, **{k: res[k] for k in METRICS if k in res}})
                if kind == "memprobe":
                    accounts.append(_agent_account(out))
                print(
                    f"  {size} {kind:8s} loop {res['loop_s']:7.2f} s"
                    f"  cpu {res['loop_cpu_s']:7.2f} s  wall {wall:7.2f} s",
                    file=sys.stderr,
                    flush=True,
                )
    med = {
        k: {m: statistics.median(r[m] for r in v) for m in METRICS + ("wall_s",)}
        for k, v in rows.items()
    }
    return {
        "size": size,
        "steps": steps,
        "pairs": pairs,
        "step_ms_plain": 1000 * med["plain"]["loop_s"] / steps,
        "median": med,
        "loop_ratio": med["memprobe"]["loop_s"] / med["plain"]["loop_s"],
        "cpu_ratio": med["memprobe"]["loop_cpu_s"] / med["plain"]["loop_cpu_s"],
        "tail_ratio": med["memprobe"]["tail_s"] / med["plain"]["tail_s"],
        "tail_cpu_ratio": med["memprobe"]["tail_cpu_s"] / med["plain"]["tail_cpu_s"],
        "wall_ratio": med["memprobe"]["wall_s"] / med["plain"]["wall_s"],
        "runs": rows,
        "agent": accounts,
    }


_CENSUS_PROBE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
import torch  # the heap of a torch script, as in a real run
from memprobe_agent import cheap
from memprobe_agent.expensive import Expensive
from memprobe_agent.interrupts import Interrupts
n = int(float(sys.argv[1]))
heap = [[] for _ in range(n)]
grows = [0] * 10
class Agent:
    config = {"run_dir": None, "overhead_budget": 0.03, "tracemalloc": "off"}
    t0 = time.monotonic()
    steps = 0
    msgs = []
    live = cheap.LiveCounts()  # what the agent's cheap pass keeps (tests' FakeAgent too)
    rss = cheap.RssReader()
    interrupts = Interrupts()
    def pace(self, interval, now): return interval
    def emit(self, m): self.msgs.append(m)
    def event(self, kind, message):
        self.msgs.append({"k": "event", "kind": kind, "message": message})
agent = Agent()
exp = Expensive(agent)
exp._census(5, time.monotonic(), None)
grows.extend([0] * 100)
exp._census(25, time.monotonic(), None)
for step in (45, 65, 85):  # steady censuses: nothing new to name; the fastest of three
    exp._census(step, time.monotonic(), None)
census = [m for m in agent.msgs if m["k"] == "census"]
print(json.dumps({"n": n, "objects": census[-1]["objects_total"], "stride": census[-1]["stride"],
                  "first_s": census[0]["duration_s"], "second_s": census[1]["duration_s"],
                  "steady_min_s": min(c["duration_s"] for c in census[2:]),
                  "timings": census[-1]["timings"], "truncated": census[-1]["truncated"],
                  "holders": [c["holder"] for c in census[-1]["containers"]],
                  "events": [m["message"] for m in agent.msgs if m["k"] == "event"]}))
"""


def bench_census(sizes: List[float]) -> List[Dict[str, Any]]:
    bootstrap = str(Path(__file__).resolve().parent.parent / "memprobe" / "bootstrap")
    out = []
    for n in sizes:
        proc = subprocess.run(
            [sys.executable, "-c", _CENSUS_PROBE, str(n), bootstrap],
            env=_env(),
            capture_output=True,
            text=True,
            check=True,
        )
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"  heap {res['objects']:>10,} objects: census {res['first_s']:.3f} s, "
            f"with holder search {res['second_s']:.3f} s, steady (min of 3) "
            f"{res['steady_min_s']:.3f} s (stride {res['stride']})",
            file=sys.stderr,
            flush=True,
        )
        out.append(res)
    return out


def report(loops: List[Dict[str, Any]], census: List[Dict[str, Any]]) -> str:
    lines = []
    if loops:
        lines += [
            "| loop | step (plain) | steps | pairs | loop plain | loop memprobe | ratio "
            "| loop CPU ratio | 2nd half ratio | 2nd half CPU ratio | wall plain "
            "| wall memprobe | ratio | censuses | census s | agent share |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in loops:
            m = r["median"]
            agent = r["agent"]
            lines.append(
                f"| {r['size']} | {r['step_ms_plain']:.1f} ms | {r['steps']} | {r['pairs']} "
                f"| {m['plain']['loop_s']:.2f} s | {m['memprobe']['loop_s']:.2f} s "
                f"| {r['loop_ratio']:.3f}x | {r['cpu_ratio']:.3f}x | {r['tail_ratio']:.3f}x "
                f"| {r['tail_cpu_ratio']:.3f}x | {m['plain']['wall_s']:.2f} s "
                f"| {m['memprobe']['wall_s']:.2f} s | {r['wall_ratio']:.3f}x "
                f"| {statistics.median(a['censuses'] for a in agent):.0f} "
                f"| {statistics.median(a['census_s'] for a in agent):.2f} "
                f"| {statistics.median(a['share'] or 0 for a in agent):.2%} |"
            )
    if census:
        lines += [
            "",
            "| live objects | stride | first census | census + holder search "
            "| steady census (min of 3) |",
            "|---|---|---|---|---|",
        ]
        for c in census:
            lines.append(
                f"| {c['objects']:,} | {c['stride']} | {c['first_s']:.3f} s "
                f"| {c['second_s']:.3f} s | {c['steady_min_s']:.3f} s |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["small", "large"])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=40.0, help="length of each training loop")
    ap.add_argument(
        "--heap",
        default="1e5,3e5,1e6,2e6,5e6",
        help="extra live objects for the census timing, comma separated",
    )
    ap.add_argument(
        "--steps",
        nargs="+",
        type=int,
        default=[],
        help="steps per run for each of --sizes (default: calibrated to --seconds)",
    )
    ap.add_argument("--no-loops", action="store_true")
    ap.add_argument("--json", help="also write the raw results here")
    args = ap.parse_args()
    steps = args.steps + [0] * (len(args.sizes) - len(args.steps))
    loops = (
        []
        if args.no_loops
        else [bench_loop(s, args.pairs, args.seconds, n) for s, n in zip(args.sizes, steps)]
    )
    census = bench_census([float(x) for x in args.heap.split(",") if x]) if args.heap else []
    print(report(loops, census))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"loops": loops, "census": census, "load": os.getloadavg()}, f, indent=1)


if __name__ == "__main__":
    main()
