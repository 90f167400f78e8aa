"""memprobe's overhead next to the tools a user would pick instead, interleaved and repeated.

    OMP_NUM_THREADS=1 python benchmarks/bench_peers.py                  # both loops, all found
    python benchmarks/bench_peers.py --sizes small --rounds 5 --seconds 10
    python benchmarks/bench_peers.py --tools plain memprobe memray      # a subset
    python benchmarks/bench_peers.py --no-loops                         # step() and RSS only

The same CPU torch loop (``train_loop.py``: ``small`` ~3 ms/step, ``large`` ~50 ms/step,
one thread) runs plainly and under each tool, every tool once per round, the order rotated
from round to round so that drift in the machine's load falls on all of them alike:

- ``plain``: the loop with memprobe's venv interpreter;
- ``memprobe``: ``memprobe run --no-live`` at defaults (census, holders, tracemalloc auto);
- ``memprobe-budget1``: the same with ``--budget 0.01`` (the census's share of wall time at
  1 % instead of the default 3 %: what the default costs);
- ``memprobe-live`` (only when asked for with ``--tools``): ``memprobe run --live`` on a
  pseudo-terminal of 120 x 50, the live table drawn with its live judge, as a person sees it;
- ``plain-peers``: the loop with the peers' interpreter (the baseline of the peers' ratios;
  same Python, same torch wheel, so it should match ``plain``: the pair shows the noise);
- ``memray``: ``memray run``; ``memray-native``: ``memray run --native``;
- ``scalene``: ``scalene run`` (memory on: its default); with torch installed scalene also
  runs torch's profiler, which makes its steps orders of magnitude slower and its run
  time grow with the step count, so it runs ``--scalene-steps`` steps in ``--scalene-rounds``
  round(s) only and its ratios are per step;
- ``mprof``: ``mprof run`` (memory_profiler: RSS sampled every 0.1 s from outside).

Peers are looked up in ``--peers`` (default ``.venv-peers/bin`` of the repository, see
``RESULTS.md``), then on PATH; a missing one is skipped and said so. They are never
dependencies of memprobe or of its tests.

Per run, from the loop itself (its JSON line) and from outside:

- loop wall and loop CPU (``time.process_time`` of the target over the loop: every thread of
  it, an in-process profiler's included), and the same for the second half of the steps;
- outside CPU during the loop: every other process of the command's tree (memprobe's
  parent, mprof's poller), from psutil polls of the tree lined up with the loop's start and
  end on the wall clock; the headline CPU ratio counts target + outside;
- whole command: wall, and CPU from ``os.wait4`` (everything, start-up and the analysis at
  exit included); the wait after the loop (loop end to the command's exit);
- the target's peak RSS at the end of its loop (``ru_maxrss``).

Ratios are taken within each round (tool / its baseline in the same round), then the median
and the min-max over rounds are printed: the spread says how much of a difference is noise.

Also: ``memprobe.step()`` per call, unprofiled and profiled (``step_cost.py``, min of
repeats, and the mean over a long run with everything the agent does at steps).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LOOP = HERE / "train_loop.py"
STEP_COST = HERE / "step_cost.py"
ALL_TOOLS = (
    "plain",
    "memprobe",
    "memprobe-budget1",
    "memprobe-live",
    "plain-peers",
    "memray",
    "memray-native",
    "scalene",
    "mprof",
)
DEFAULT_TOOLS = tuple(t for t in ALL_TOOLS if t != "memprobe-live")
BASELINE = {
    "plain": None,
    "memprobe": "plain",
    "memprobe-budget1": "plain",
    "memprobe-live": "plain",
    "plain-peers": "plain",
    "memray": "plain-peers",
    "memray-native": "plain-peers",
    "scalene": "plain-peers",
    "mprof": "plain-peers",
}
POLL_S = 0.1


def env() -> Dict[str, str]:
    e = dict(os.environ)
    e["OMP_NUM_THREADS"] = "1"
    e.pop("MEMPROBE_CONFIG", None)
    e.pop("PYTHONPATH", None)
    return e


def find_peer(name: str, peers_bin: Path) -> Optional[str]:
    path = peers_bin / name
    if path.exists():
        return str(path)
    return shutil.which(name)


@dataclass
class Tools:
    python: str
    peers_python: Optional[str]
    found: Dict[str, str] = field(default_factory=dict)  # tool -> executable
    missing: List[str] = field(default_factory=list)

    @staticmethod
    def discover(wanted: List[str], peers_bin: Path) -> Tools:
        peers_py = str(peers_bin / "python") if (peers_bin / "python").exists() else None
        t = Tools(python=sys.executable, peers_python=peers_py)
        exe = {
            "memray": "memray",
            "memray-native": "memray",
            "scalene": "scalene",
            "mprof": "mprof",
        }
        for tool in wanted:
            if tool in ("plain", "memprobe", "memprobe-budget1", "memprobe-live"):
                t.found[tool] = sys.executable
            elif tool == "plain-peers":
                if peers_py:
                    t.found[tool] = peers_py
                else:
                    t.missing.append(tool)
            else:
                path = find_peer(exe[tool], peers_bin)
                if path:
                    t.found[tool] = path
                else:
                    t.missing.append(tool)
        return t

    def command(self, tool: str, loop_args: List[str], tmp: str) -> List[str]:
        loop = [str(LOOP), *loop_args]
        exe = self.found[tool]
        out = os.path.join(tmp, tool)
        if tool in ("plain", "plain-peers"):
            return [exe, *loop]
        if tool == "memprobe":
            return [exe, "-m", "memprobe", "run", "--no-live", "-o", out + ".json", *loop]
        if tool == "memprobe-budget1":  # the census budget at 1 % instead of 3 %
            return [exe, "-m", "memprobe", "run", "--no-live", "--budget", "0.01", "-o",
                    out + ".json", *loop]  # fmt: skip
        if tool == "memprobe-live":  # run on a pseudo-terminal: the live table is drawn
            return [exe, "-m", "memprobe", "run", "--live", "-o", out + ".json", *loop]
        if tool == "memray":
            return [exe, "run", "-q", "-f", "-o", out + ".bin", *loop]
        if tool == "memray-native":
            return [exe, "run", "-q", "-f", "--native", "-o", out + ".bin", *loop]
        if tool == "scalene":
            return [exe, "run", "-o", out + ".json", str(LOOP), "---", *loop_args]
        if tool == "mprof":
            return [exe, "run", "-o", out + ".dat", *loop]
        raise ValueError(tool)


class TreeCpu:
    """Polls the CPU times of every process of a command's tree (psutil, every POLL_S)."""

    def __init__(self, root: int) -> None:
        self.samples: List[Tuple[float, Dict[int, float]]] = []
        self._root = root
        self._stop = threading.Event()
        self._procs: Dict[int, psutil.Process] = {}
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        try:
            root = psutil.Process(self._root)
        except psutil.Error:
            return
        while not self._stop.is_set():
            try:
                tree = [root, *root.children(recursive=True)]
            except psutil.Error:
                tree = [root]
            cpu: Dict[int, float] = {}
            for p in tree:
                p = self._procs.setdefault(p.pid, p)
                try:
                    c = p.cpu_times()
                    cpu[p.pid] = c.user + c.system
                except psutil.Error:
                    pass
            self.samples.append((time.time(), cpu))
            self._stop.wait(POLL_S)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def outside_cpu(self, target: int, t0: float, t1: float) -> Optional[float]:
        """CPU seconds used between wall times t0 and t1 by the tree's processes other
        than ``target`` (linear interpolation between polls)."""
        if len(self.samples) < 2 or t1 <= t0:
            return None

        def at(t: float) -> float:
            def others(cpu: Dict[int, float]) -> float:
                return sum(v for pid, v in cpu.items() if pid != target)

            prev = self.samples[0]
            if t <= prev[0]:
                return others(prev[1])
            for s in self.samples[1:]:
                if s[0] >= t:
                    a, b = others(prev[1]), others(s[1])
                    return a + (b - a) * (t - prev[0]) / max(1e-9, s[0] - prev[0])
                prev = s
            return others(prev[1])

        return at(t1) - at(t0)


def _pty(rows: int = 50, cols: int = 120) -> Tuple[int, int]:
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    return master, slave


def run_once(cmd: List[str], timeout: float, tty: bool = False) -> Dict[str, Any]:
    """Run one command; its loop's result comes through a file (BENCH_RESULT). ``tty``: the
    command gets a pseudo-terminal for stdin/stdout/stderr (memprobe draws its live table)."""
    fd, result_path = tempfile.mkstemp(prefix="bench-result-")
    os.close(fd)
    e = env()
    e["BENCH_RESULT"] = result_path
    master = slave = -1
    if tty:
        master, slave = _pty()
        e["TERM"] = "xterm-256color"
        streams: Dict[str, Any] = {"stdin": slave, "stdout": slave, "stderr": slave}
    else:
        streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    t0 = time.perf_counter()
    w0 = time.time()
    proc = subprocess.Popen(cmd, env=e, text=not tty, start_new_session=tty, **streams)
    if tty:
        os.close(slave)
    poll = TreeCpu(proc.pid)
    out_chunks: List[str] = []
    err_chunks: List[str] = []

    def drain(stream: Any, into: List[str]) -> None:
        for line in stream:
            into.append(line)

    def drain_pty() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            out_chunks.append(data.decode("utf-8", "replace")[-2000:])
            del out_chunks[:-4]

    if tty:
        readers = [threading.Thread(target=drain_pty, daemon=True)]
    else:
        readers = [
            threading.Thread(target=drain, args=(proc.stdout, out_chunks), daemon=True),
            threading.Thread(target=drain, args=(proc.stderr, err_chunks), daemon=True),
        ]
    for r in readers:
        r.start()
    deadline = time.monotonic() + timeout
    status = None
    usage = None
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            poll.stop()
            return {"timeout": True, "wall_s": time.perf_counter() - t0}
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    end_epoch = time.time()
    proc.returncode = os.waitstatus_to_exitcode(status)
    poll.stop()
    for r in readers:
        r.join(timeout=5)
    if tty:
        os.close(master)
    stderr = "".join(err_chunks or out_chunks)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {stderr[-2000:]}")
    with open(result_path) as f:
        res = json.loads(f.read().strip().splitlines()[-1])
    os.unlink(result_path)
    outside = poll.outside_cpu(res["pid"], res["loop_t0_epoch"], res["loop_t1_epoch"]) or 0.0
    return {
        "loop_s": res["loop_s"],
        "loop_cpu_s": res["loop_cpu_s"],
        "tail_s": res["tail_s"],
        "tail_cpu_s": res["tail_cpu_s"],
        "outside_cpu_s": outside,
        "outside_share": outside / res["loop_s"],
        "loop_all_cpu_s": res["loop_cpu_s"] + outside,
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "exit_wait_s": end_epoch - res["loop_t1_epoch"],
        "start_s": res["loop_t0_epoch"] - w0,
        "maxrss_mb": res["maxrss_kb"] / 1024,
        "loop_t0_epoch": res["loop_t0_epoch"],
        "loop_t1_epoch": res["loop_t1_epoch"],
        "steps": res["steps"],
        "step_ms": res["step_ms"],
    }


# what is compared: per-step loop figures, so that scalene's shorter runs compare too
RATIOS: Tuple[Tuple[str, Callable[[Dict[str, Any]], float]], ...] = (
    ("loop wall", lambda r: r["loop_s"] / r["steps"]),
    ("loop CPU (target + outside)", lambda r: r["loop_all_cpu_s"] / r["steps"]),
    ("loop CPU (target)", lambda r: r["loop_cpu_s"] / r["steps"]),
    ("2nd half wall", lambda r: r["tail_s"] / r["steps"]),
    ("2nd half CPU (target)", lambda r: r["tail_cpu_s"] / r["steps"]),
    ("command wall", lambda r: r["wall_s"]),
    ("command CPU", lambda r: r["cpu_s"]),
)


def bench_loop(
    tools: Tools,
    size: str,
    rounds: int,
    seconds: float,
    steps: int,
    scalene_steps: int,
    scalene_rounds: int,
    timeout: float,
) -> Dict[str, Any]:
    if not steps:
        probe = run_once([tools.python, str(LOOP), "--size", size, "--steps", "40"], 120)
        steps = max(50, int(seconds / (probe["loop_s"] / 40)))
    names = list(tools.found)
    runs: Dict[str, List[Optional[Dict[str, Any]]]] = {t: [] for t in names}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            if r % 2:
                order.reverse()
            for tool in order:
                n = steps
                if tool == "scalene":
                    if r >= scalene_rounds:
                        runs[tool].append(None)
                        continue
                    n = min(steps, scalene_steps)
                cmd = tools.command(tool, ["--size", size, "--steps", str(n)], tmp)
                res = run_once(cmd, timeout, tty=tool == "memprobe-live")
                if tool.startswith("memprobe") and not res.get("timeout"):
                    res["agent"] = agent_account(os.path.join(tmp, tool) + ".json", res)
                runs[tool].append(res)
                if res.get("timeout"):
                    print(
                        f"  {size} r{r} {tool:14s} TIMEOUT after {timeout:.0f} s", file=sys.stderr
                    )
                    continue
                print(
                    f"  {size} r{r} {tool:14s} loop {res['loop_s']:7.2f} s "
                    f"({res['step_ms']:6.2f} ms/step) cpu {res['loop_cpu_s']:7.2f} s "
                    f"outside {res['outside_share']:6.1%} wall {res['wall_s']:7.2f} s "
                    f"cpu(all) {res['cpu_s']:7.2f} s exit wait {res['exit_wait_s']:5.2f} s "
                    f"maxrss {res['maxrss_mb']:6.0f} MB",
                    file=sys.stderr,
                    flush=True,
                )
    return {"size": size, "steps": steps, "rounds": rounds, "runs": runs}


def agent_account(record_path: str, res: Dict[str, Any]) -> Dict[str, Any]:
    """What the agent says it spent (census payloads of the main process in run.json)."""
    try:
        with open(record_path) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return {}
    main = next((p for p in record["processes"] if p["role"] == "main"), None)
    full = [c for c in (main or {}).get("census", []) if "types" in c]
    t0, t1 = (
        res["loop_t0_epoch"] - record["started_at"],
        res["loop_t1_epoch"] - record["started_at"],
    )
    in_loop = [c for c in full if t0 <= c.get("t", -1.0) <= t1]  # not the exit census
    census_s = sum(c.get("duration_s", 0.0) for c in in_loop)
    return {
        "censuses": len(full),
        "censuses_in_loop": len(in_loop),
        "census_s": census_s,
        "census_share_of_loop": census_s / res["loop_s"] if res.get("loop_s") else None,
        "verdict": record.get("verdict"),
    }


def _ok(r: Optional[Dict[str, Any]]) -> bool:
    return r is not None and not r.get("timeout")


def summarize(loop: Dict[str, Any]) -> Dict[str, Any]:
    runs = loop["runs"]
    out: Dict[str, Any] = {}
    for tool, rs in runs.items():
        base = BASELINE.get(tool)
        entry: Dict[str, Any] = {"n": sum(1 for r in rs if _ok(r))}
        good = [r for r in rs if _ok(r)]
        if good:
            for key in ("step_ms", "outside_share", "exit_wait_s", "maxrss_mb", "wall_s"):
                vals = [r[key] for r in good]
                entry[key] = (statistics.median(vals), min(vals), max(vals))
            shares = [
                r["agent"]["census_share_of_loop"]
                for r in good
                if (r.get("agent") or {}).get("census_share_of_loop") is not None
            ]
            if shares:
                entry["census_share"] = (statistics.median(shares), min(shares), max(shares))
        if base is not None and base in runs:
            ratios: Dict[str, Tuple[float, float, float]] = {}
            for name, fn in RATIOS:
                if tool == "scalene" and name.startswith("command"):
                    continue  # fewer steps: only per-step figures compare
                per_round = [
                    fn(a) / fn(b) for a, b in zip(rs, runs[base]) if _ok(a) and _ok(b) and fn(b) > 0
                ]
                if per_round:
                    ratios[name] = (
                        statistics.median(per_round),
                        min(per_round),
                        max(per_round),
                    )
            entry["ratios"] = ratios
            base_rss = [r["maxrss_mb"] for r in runs[base] if _ok(r)]
            if good and base_rss:
                entry["rss_over_base_mb"] = statistics.median(
                    r["maxrss_mb"] for r in good
                ) - statistics.median(base_rss)
        out[tool] = entry
    return out


def _fmt_ratio(v: Optional[Tuple[float, float, float]]) -> str:
    if v is None:
        return "–"
    return f"{v[0]:.3f}× ({v[1]:.2f}–{v[2]:.2f})"


def report_loop(loop: Dict[str, Any], summary: Dict[str, Any]) -> str:
    names = [n for n, _ in RATIOS]
    lines = [
        f"### {loop['size']} loop: {loop['steps']} steps, {loop['rounds']} rounds",
        "",
        "| tool | vs | runs | ms/step | " + " | ".join(names) + " | outside CPU (% core) "
        "| wait after loop | peak RSS Δ | census time in loop / loop |",
        "|---|---|---|---|" + "---|" * len(names) + "---|---|---|---|",
    ]
    for tool, e in summary.items():
        base = BASELINE.get(tool) or ""
        ratios = e.get("ratios", {})
        step, share = e.get("step_ms"), e.get("outside_share")
        wait, rss = e.get("exit_wait_s"), e.get("rss_over_base_mb")
        cells = [
            tool,
            base or "–",
            str(e["n"]),
            f"{step[0]:.2f}" if step else "–",
            *[_fmt_ratio(ratios.get(n)) if base else "–" for n in names],
            f"{100 * share[0]:.1f} % ({100 * share[1]:.1f}–{100 * share[2]:.1f})" if share else "–",
            f"{wait[0]:.2f} s" if wait else "–",
            f"{rss:+.0f} MB" if rss is not None else "–",
            (
                f"{100 * e['census_share'][0]:.1f} % ({100 * e['census_share'][1]:.1f}–"
                f"{100 * e['census_share'][2]:.1f})"
                if e.get("census_share")
                else "–"
            ),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bench_step(tools: Tools, calls: int, repeats: int) -> Dict[str, Any]:
    """ns per memprobe.step(): unprofiled, and under memprobe run at defaults."""
    base = [tools.python, str(STEP_COST), "--calls", str(calls), "--repeats", str(repeats)]
    out: Dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, cmd in (
            ("unprofiled", base),
            (
                "profiled",
                [
                    tools.python,
                    "-m",
                    "memprobe",
                    "run",
                    "--no-live",
                    "-o",
                    os.path.join(tmp, "s.json"),
                    *base[1:],
                ],
            ),
        ):
            proc = subprocess.run(cmd, env=env(), capture_output=True, text=True, check=True)
            line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("{"))
            out[kind] = json.loads(line)
    out["delta_ns"] = out["profiled"]["min_ns"] - out["unprofiled"]["min_ns"]
    out["delta_mean_ns"] = out["profiled"]["mean_ns"] - out["unprofiled"]["mean_ns"]
    return out


def machine() -> Dict[str, Any]:
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), ""
            )
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "load_before": os.getloadavg(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["small", "large"])
    ap.add_argument("--tools", nargs="+", default=list(DEFAULT_TOOLS), choices=ALL_TOOLS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10.0, help="loop length of each run")
    ap.add_argument("--steps", nargs="+", type=int, default=[], help="steps per --sizes entry")
    ap.add_argument("--scalene-steps", type=int, default=20)
    ap.add_argument("--scalene-rounds", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300.0, help="per run")
    ap.add_argument("--peers", default=str(ROOT / ".venv-peers" / "bin"))
    ap.add_argument("--step-calls", type=int, default=1_000_000)
    ap.add_argument("--no-loops", action="store_true")
    ap.add_argument("--no-step", action="store_true")
    ap.add_argument("--json", help="also write the raw results here")
    args = ap.parse_args()
    wanted = list(dict.fromkeys(["plain", *args.tools]))
    if any(BASELINE[t] == "plain-peers" for t in wanted) and "plain-peers" not in wanted:
        wanted.insert(1, "plain-peers")
    tools = Tools.discover(wanted, Path(args.peers))
    info = machine()
    print(
        f"machine: {info['nproc']} cores, {info['cpu']}, {info['ram_gb']} GiB, "
        f"Python {info['python']}, {info['date']}, load {info['load_before'][0]:.2f}",
        file=sys.stderr,
    )
    found = [t for t in tools.found if t not in ("plain", "plain-peers")]
    print(
        f"tools found: {', '.join(found)}; missing: {', '.join(tools.missing) or 'none'}",
        file=sys.stderr,
    )
    results: Dict[str, Any] = {
        "machine": info,
        "found": found,
        "missing": tools.missing,
        "argv": sys.argv,
        "loops": [],
        "step": None,
    }
    text = [f"tools found: {', '.join(found)}; missing: {', '.join(tools.missing) or 'none'}", ""]
    if not args.no_loops:
        steps = args.steps + [0] * (len(args.sizes) - len(args.steps))
        for size, n in zip(args.sizes, steps):
            loop = bench_loop(
                tools,
                size,
                args.rounds,
                args.seconds,
                n,
                args.scalene_steps,
                args.scalene_rounds,
                args.timeout,
            )
            summary = summarize(loop)
            results["loops"].append({**loop, "summary": summary})
            text += [report_loop(loop, summary), ""]
    if not args.no_step:
        step = bench_step(tools, args.step_calls, 5)
        results["step"] = step
        text += [
            "### memprobe.step()",
            "",
            "| | min over repeats | mean over the whole run (samples, censuses included) |",
            "|---|---|---|",
            f"| unprofiled | {step['unprofiled']['min_ns']:.0f} ns "
            f"| {step['unprofiled']['mean_ns']:.0f} ns |",
            f"| profiled (memprobe run, defaults) | {step['profiled']['min_ns']:.0f} ns "
            f"| {step['profiled']['mean_ns']:.0f} ns |",
            f"| difference | {step['delta_ns']:+.0f} ns | {step['delta_mean_ns']:+.0f} ns |",
        ]
    info["load_after"] = os.getloadavg()
    print("\n".join(text))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
