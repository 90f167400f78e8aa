"""Long runs: does memprobe's parent stay flat over hours, and how big is the record?

    python benchmarks/bench_long.py                       # a 24 h run compressed, leak + no leak
    python benchmarks/bench_long.py --hours 6 --scenario leak
    OMP_NUM_THREADS=1 python benchmarks/bench_long.py --real --steps 1000000

Compressed (default): a synthetic message stream of ``--hours`` hours, written hour by
hour into a run folder the way the agents write it (``proc-<pid>.jsonl``: wire format of
``memprobe_agent/wire.py``) and the launcher journals it (``parent.jsonl``), and read back by
the parent's own code: ``Tailer`` -> ``RunState.ingest``/``ingest_outside`` -> the live table
(``render.live.build_table`` with the live judge, rendered to a 120-column console) ->
``build_record`` -> ``finalize`` (the analysis) -> ``record.save``. Three processes: a main
at 20 steps/s sampled every 0.1 s (RSS, heap blocks), its watched containers polled every
0.1 s, a census every 4 s (~2 KB: types, tensors, graphs, containers, growing types), and
two DataLoader workers sampled every 0.5 s; the parent's outside samples (RSS, USS, PSS)
every 0.5 s. What comes and goes: an episode buffer that grows for three hours then is
cleared, a dict population that grows then plateaus, an hourly RSS sawtooth; with
``--scenario leak`` a list that gains one tensor per step from ``--leak-from`` hours on, and
RSS with it (2 KiB/step).

Reported, every simulated hour: the parent's RSS (this process: the state it holds), the
cost of one live-table update (build + render; the launcher rebuilds it at most once a
second) and of one live-judge refresh (build_record + analysis, at most every 2 s and 5 % of
a core), ingestion throughput. At the end:
the wait for the analysis and the record (build + finalize + save), run.json's size, and
the verdict of the bounded record against the verdict of a record rebuilt from the same run
folder at full resolution (every point, every census): they must be the same, signal by
signal.

Real (``--real``): a loop of ``--steps`` fast steps (``memprobe.step()``, a list that grows
and is cleared now and then) under ``memprobe run --keep-run-dir``: run.json size, the
parent's RSS and CPU over time (psutil polls of it), the wait after the loop.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from memprobe.bootstrap.memprobe_agent import wire  # noqa: E402
from memprobe.collect.assemble import build_record  # noqa: E402
from memprobe.collect.journal import PARENT_FILE  # noqa: E402
from memprobe.collect.state import RunState  # noqa: E402
from memprobe.launch.tail import Tailer  # noqa: E402
from memprobe.record import ExitInfo, Limits  # noqa: E402

STARTED_AT = 1_800_000_000.0
MAIN, W1, W2 = 4242, 4243, 4244
STEPS_PER_S = 20.0
SAMPLE_S = 0.1
CENSUS_S = 4.0
OUTSIDE_S = 0.5
SLICE_S = 10.0  # the parent reads the files every this many simulated seconds
MB = 1024 * 1024


class Stream:
    """The messages of a compressed run, one simulated hour at a time."""

    def __init__(self, scenario: str, leak_from_h: float, seed: int = 0) -> None:
        self.leak = scenario == "leak"
        self.leak_from = leak_from_h * 3600
        self.rng = random.Random(seed)
        self.seq = 0
        self.prev_types: Dict[str, int] = {}

    # -- the model of the run ------------------------------------------------------------

    def step(self, t: float) -> int:
        return int(t * STEPS_PER_S)

    def history_len(self, t: float) -> int:
        if not self.leak or t < self.leak_from:
            return 4
        return 4 + self.step(t) - self.step(self.leak_from)

    def episode_len(self, t: float) -> int:
        h = t / 3600
        if 2 <= h < 5:
            return int((t - 7200) * STEPS_PER_S)
        return int(50 + 50 * math.sin(t / 60))  # bounded, wobbling

    def dicts(self, t: float) -> int:
        h = t / 3600
        grown = min(max(h - 6, 0.0), 2.0) * 3600 * 2  # +2/s for two hours, then flat
        return int(27000 + grown + self.rng.randint(-30, 30))

    def rss(self, t: float) -> float:
        base = 2048 * MB + 30 * MB * ((t % 3600) / 3600)  # an hourly sawtooth
        base += 4 * self.episode_len(t) * 1024  # the buffer holds 4 KiB per item
        if self.leak and t >= self.leak_from:
            base += 2048 * (self.step(t) - self.step(self.leak_from))
        return float(int(base + self.rng.uniform(-1, 1) * MB) // 4096 * 4096)

    # -- messages -------------------------------------------------------------------------

    def headers(self) -> Dict[int, List[Dict[str, Any]]]:
        def header(pid: int, forked: Optional[int]) -> Dict[str, Any]:
            return {
                "k": wire.K_HEADER,
                "wire": 1,
                "pid": pid,
                "ppid": MAIN if forked else 4000,
                "forked_from": forked,
                "argv": ["train.py", "--epochs", "100"],
                "orig_argv": ["python", "train.py", "--epochs", "100"],
                "executable": "/usr/bin/python3",
                "python": "3.11.7",
                "cwd": "/work",
                "host": "vm",
                "wall_t0": STARTED_AT + 1.0,
                "rank": None,
                "mp_child": bool(forked),
            }

        return {
            MAIN: [header(MAIN, None)],
            W1: [header(W1, MAIN), {"k": wire.K_IDENTITY, "t": 1.0, "worker_id": 0}],
            W2: [header(W2, MAIN), {"k": wire.K_IDENTITY, "t": 1.0, "worker_id": 1}],
        }

    def census(self, t: float) -> Dict[str, Any]:
        self.seq += 1
        hist, epi, dicts = self.history_len(t), self.episode_len(t), self.dicts(t)
        tensors = 32 + (hist - 4)
        types: Dict[str, Dict[str, Any]] = {
            "function": {"count": 58706},
            "tuple": {"count": 54046 + self.rng.randint(-20, 20)},
            "dict": {"count": dicts},
            "cell": {"count": 25120},
            "builtin_function_or_method": {"count": 13790},
            "list": {"count": 11932 + self.rng.randint(-5, 5)},
            "types.GenericAlias": {"count": 10072},
            "getset_descriptor": {"count": 9962},
            "weakref.ReferenceType": {"count": 8334},
            "method_descriptor": {"count": 6168},
            "type": {"count": 4140},
            "torch.Tensor": {"count": tensors, "kind": "tensor"},
            "torch.nn.modules.linear.Linear": {"count": 3, "kind": "module"},
            "torch.nn.parameter.Parameter": {"count": 6, "kind": "tensor"},
            "AccumulateGrad": {"count": 6},
        }
        counts = {k: v["count"] for k, v in types.items()}
        growing = []
        if self.prev_types:
            for k, n in counts.items():
                d = n - self.prev_types.get(k, 0)
                if d >= 4:
                    growing.append({"type": k, "count": n, "delta": d})
        self.prev_types = counts
        step = self.step(t)
        containers = [
            {
                "holder": "trainer.episode_buffer",
                "type": "list",
                "len": epi,
                "grew": max(0, epi - 50),
                "first_len": 50,
                "first_step": 100,
                "elem_types": ["dict"],
                "chain": ["__main__", ".trainer", ".episode_buffer"],
                "complete": True,
            }
        ]
        if hist > 4:
            containers.append(
                {
                    "holder": "__main__.history",
                    "type": "list",
                    "len": hist,
                    "grew": hist - 4,
                    "first_len": 4,
                    "first_step": self.step(self.leak_from),
                    "elem_types": ["torch.Tensor"],
                    "chain": ["__main__", ".history"],
                    "complete": True,
                }
            )
        v = {
            "tensors:count": tensors,
            "tensors:grad_fn_count": 1 + (hist - 4),
            "tensors:cpu_bytes": 6381612 + 2048 * (hist - 4),
            "graph:nodes": 17,
            "graph:roots": 1,
            "graph:largest": 17,
            "modules:count": 6,
            "modules:param_bytes": 1579012,
            "ndarray:count": 0,
            "ndarray:bytes": 0,
            "objects:dict": dicts,
            "container:trainer.episode_buffer:len": epi,
        }
        if hist > 4:
            v["container:__main__.history:len"] = hist
        return {
            "k": wire.K_CENSUS,
            "t": t - 1.0,
            "step": step,
            "seq": self.seq,
            "v": v,
            "objects_total": sum(counts.values()),
            "stride": 1,
            "types": types,
            "tensors": {
                "count": tensors,
                "grad_fn_count": 1 + (hist - 4),
                "bytes_by_device": {"cpu": 6381612 + 2048 * (hist - 4)},
                "param_bytes": 1579012,
                "by": [{"device": "cpu", "dtype": "float32", "count": tensors, "bytes": 6381612}],
            },
            "graphs": {"nodes": 17, "roots": 1, "largest": 17, "mean_per_root": 17.0},
            "modules": {"count": 6, "types": {"torch.nn.modules.linear.Linear": 3}},
            "ndarray": {"count": 0, "bytes": 0},
            "truncated": [],
            "timings": {"objects_s": 0.1081, "details_s": 0.0016, "holders_s": 0.004},
            "containers": containers,
            "growing_types": growing[:10],
            "duration_s": 0.11,
            "budget": {"census_s": 0.33 * self.seq, "share": 0.029},
        }

    def hour(self, h: int, out: Dict[int, Any]) -> Iterator[List[Tuple[int, float, Any]]]:
        """Write hour h's agent messages through ``out[pid].append`` (a file writer); after
        every SLICE_S simulated seconds, yield that slice's outside samples (pid, t, values)."""
        outside: List[Tuple[int, float, Any]] = []
        t0 = max(1.05, h * 3600.0)
        n = int((3600.0 - (t0 - h * 3600)) / SAMPLE_S)
        next_census = math.ceil(t0 / CENSUS_S) * CENSUS_S
        for i in range(n):
            t = t0 + i * SAMPLE_S
            step = self.step(t)
            main = out[MAIN]
            main.append(
                {
                    "k": wire.K_SAMPLE,
                    "t": t - 1.0,
                    "step": step,
                    "v": {
                        wire.RSS: self.rss(t),
                        wire.PY_BLOCKS: 1_083_000
                        + 2 * self.episode_len(t)
                        + 3 * (self.history_len(t) - 4)
                        + self.rng.randint(-500, 500),
                    },
                }
            )
            watched = {"container:trainer.episode_buffer:len": self.episode_len(t)}
            if self.history_len(t) > 4:
                watched["container:__main__.history:len"] = self.history_len(t)
            main.append({"k": wire.K_SAMPLE, "t": t - 1.0 + 0.05, "step": step, "v": watched})
            if t >= next_census:
                main.append(self.census(t))
                next_census += CENSUS_S
            if i % 5 == 0:  # every 0.5 s
                for pid in (W1, W2):
                    rss = 700 * MB + self.rng.randint(-64, 64) * 4096
                    out[pid].append(
                        {
                            "k": wire.K_SAMPLE,
                            "t": t - 1.0,
                            "step": None,
                            "v": {wire.RSS: rss, wire.PY_BLOCKS: 400_000},
                        }
                    )
                for pid in (MAIN, W1, W2):
                    rss = int(self.rss(t)) if pid == MAIN else 700 * MB
                    outside.append(
                        (pid, t, {wire.RSS: rss, "uss_bytes": 0.7 * rss, "pss_bytes": 0.8 * rss})
                    )
            if (i + 1) % int(SLICE_S / SAMPLE_S) == 0 or i == n - 1:
                yield outside
                outside = []


def parent_rss_mb() -> float:
    gc.collect()
    return float(psutil.Process().memory_info().rss) / MB


def live_costs(state: RunState, judge: Any, elapsed: float) -> Tuple[float, float]:
    """(seconds of one table update + render, seconds of one live-judge refresh)."""
    from rich.console import Console

    from memprobe.render.live import build_table

    console = Console(file=io.StringIO(), width=120, force_terminal=True, color_system="truecolor")
    t0 = time.perf_counter()
    judge._next = 0.0  # force a refresh now
    judge._refresh(state)
    t_judge = time.perf_counter() - t0
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        renderable = build_table(state, elapsed, judge._verdicts, judge._header, judge._rows)
        console.print(renderable)
        best = min(best, time.perf_counter() - t0)
    return best, t_judge


class Writer:
    """Appends encoded messages to one file of the run folder, a block at a time."""

    def __init__(self, run_dir: str, pid: int) -> None:
        name = PARENT_FILE if pid == 0 else wire.proc_file_name(pid)
        self.f = open(os.path.join(run_dir, name), "a", encoding="utf-8")  # noqa: SIM115
        self.buf: List[str] = []
        self.bytes = 0

    def append(self, msg: Dict[str, Any]) -> None:
        line = wire.safe_encode(msg)
        self.bytes += len(line)
        self.buf.append(line)
        if len(self.buf) >= 1000:
            self.flush()

    def flush(self) -> None:
        self.f.write("".join(self.buf))
        self.f.flush()
        self.buf = []

    def close(self) -> None:
        self.flush()
        self.f.close()


def write_lines(run_dir: str, pid: int, msgs: List[Dict[str, Any]]) -> int:
    data = "".join(wire.safe_encode(m) for m in msgs)
    name = PARENT_FILE if pid == 0 else wire.proc_file_name(pid)
    with open(os.path.join(run_dir, name), "a", encoding="utf-8") as f:
        f.write(data)
    return len(data)


def compressed(hours: int, scenario: str, leak_from: float, full_check: bool) -> Dict[str, Any]:
    from memprobe import record as rec
    from memprobe.analysis import DetectOptions
    from memprobe.analysis.finalize import finalize
    from memprobe.render.livejudge import LiveJudge

    stream = Stream(scenario, leak_from)
    tmp = tempfile.mkdtemp(prefix="memprobe-long-")
    run_dir = os.path.join(tmp, "run.run")
    os.mkdir(run_dir, 0o700)
    write_lines(
        run_dir,
        0,
        [
            {
                "k": "meta",
                "command": ["python", "train.py"],
                "cwd": "/work",
                "started_at": STARTED_AT,
                "memprobe_version": "bench",
                "limits": {"ram_bytes": 24 * 1024 * MB, "ram_source": "machine", "gpu_bytes": []},
            }
        ],
    )
    for pid, msgs in stream.headers().items():
        write_lines(run_dir, pid, msgs)
    state = RunState(
        command=["python", "train.py"],
        cwd="/work",
        started_at=STARTED_AT,
        limits=Limits(ram_bytes=24 * 1024 * MB, ram_source="machine"),
    )
    judge = LiveJudge(DetectOptions())
    tailer = Tailer(run_dir)
    rows = []
    import memprobe.analysis.culprit  # noqa: F401 - what the parent imports at its first refresh
    import memprobe.render.live  # noqa: F401

    rss0 = parent_rss_mb()
    file_bytes = 0
    msgs_total = 0
    for h in range(hours):
        writers = {pid: Writer(run_dir, pid) for pid in (MAIN, W1, W2)}
        journal = Writer(run_dir, 0)
        t_gen = 0.0
        ingest_s = 0.0
        n = 0
        slices = stream.hour(h, writers)
        while True:
            g0 = time.process_time()
            outside = next(slices, None)
            if outside is None:
                break
            for w in writers.values():
                w.flush()
            for pid, t, v in outside:  # the launcher's journal of its outside samples
                journal.append(
                    {
                        "k": "outside",
                        "pid": pid,
                        "ppid": MAIN if pid != MAIN else 4000,
                        "t": t,
                        "v": v,
                    }
                )
            journal.flush()
            c0 = time.process_time()
            t_gen += c0 - g0
            # what the launcher does at each poll: new lines of every file, then its own samples
            batch = tailer.poll()
            for pid, msg in batch:
                state.ingest(pid, msg)
            for pid, t, v in outside:
                state.ingest_outside(pid, t, v, MAIN if pid != MAIN else 4000)
            n += len(batch) + len(outside)
            ingest_s += time.process_time() - c0
        for w in [*writers.values(), journal]:
            w.close()
            file_bytes += w.bytes
        msgs_total += n
        elapsed = (h + 1) * 3600.0
        table_s, judge_s = live_costs(state, judge, elapsed)
        t0 = time.perf_counter()
        build_record(state, ExitInfo(), elapsed)
        build_s = time.perf_counter() - t0
        row = {
            "hour": h + 1,
            "parent_rss_mb": parent_rss_mb() - rss0,
            "msgs": n,
            "ingest_us_per_msg": 1e6 * ingest_s / max(1, n),
            "table_ms": 1000 * table_s,
            "judge_ms": 1000 * judge_s,
            "build_ms": 1000 * build_s,
            "files_mb": file_bytes / MB,
            "gen_s": t_gen,
        }
        rows.append(row)
        print(
            f"  h{h + 1:>2} parent RSS +{row['parent_rss_mb']:6.1f} MB  ingest "
            f"{row['ingest_us_per_msg']:5.1f} µs/msg ({n:,} msgs)  table {row['table_ms']:6.1f} ms"
            f"  judge {row['judge_ms']:7.1f} ms  build {row['build_ms']:6.1f} ms  "
            f"files {row['files_mb']:6.0f} MB",
            file=sys.stderr,
            flush=True,
        )
    # the end of the run: what the user waits for
    duration = hours * 3600.0
    write_lines(
        run_dir,
        0,
        [
            {
                "k": wire.K_EXIT,
                "code": 0,
                "signal": None,
                "oom_killed": False,
                "duration_s": duration,
            }
        ],
    )
    out = os.path.join(tmp, "run.json")
    t0 = time.perf_counter()
    record = build_record(state, ExitInfo(code=0), duration)
    t_build = time.perf_counter() - t0
    record = finalize(record, DetectOptions())
    t_analysis = time.perf_counter() - t0 - t_build
    rec.save(record, out)
    t_end = time.perf_counter() - t0
    size = os.path.getsize(out)
    result: Dict[str, Any] = {
        "hours": hours,
        "scenario": scenario,
        "messages": msgs_total,
        "rows": rows,
        "end_build_s": t_build,
        "end_analysis_s": t_analysis,
        "end_total_s": t_end,
        "run_json_bytes": size,
        "verdict": record.verdict,
        "findings": [
            (f.pid, f.signal, f.verdict, f.culprit.get("holder") if f.culprit else None)
            for f in record.findings
            if f.verdict == "leak"
        ],
        "points": max(len(s.value) for p in record.processes for s in p.series.values()),
        "censuses": [len(p.census) for p in record.processes],
    }
    print(
        f"  end: build {t_build:.2f} s + analysis {t_analysis:.2f} s + save = {t_end:.2f} s; "
        f"run.json {size / MB:.2f} MB; verdict {record.verdict}; "
        f"{len(result['findings'])} leak finding(s)",
        file=sys.stderr,
        flush=True,
    )
    del state, judge, tailer
    gc.collect()
    if full_check:
        result["full"] = full_resolution_check(run_dir, record)
    return result


def full_resolution_check(run_dir: str, bounded: Any) -> Dict[str, Any]:
    """Rebuild the same run folder keeping every point and census; judge it; compare."""
    from memprobe.analysis import DetectOptions
    from memprobe.analysis.finalize import finalize
    from memprobe.collect.rebuild import rebuild

    t0 = time.perf_counter()
    try:
        full = rebuild(run_dir, max_points=None)
    except TypeError:  # a memprobe without bounded buffers: nothing to compare
        return {"skipped": "rebuild() has no max_points"}
    full = finalize(full, DetectOptions())
    took = time.perf_counter() - t0

    def verdicts(r: Any) -> Dict[str, Optional[str]]:
        return {
            f"{pid}:{name}": s.verdict for pid, sig in r.signals.items() for name, s in sig.items()
        }

    def reasons(r: Any) -> Dict[str, str]:
        return {
            f"{pid}:{name}": s.reason for pid, sig in r.signals.items() for name, s in sig.items()
        }

    vb, vf = verdicts(bounded), verdicts(full)
    rb, rf = reasons(bounded), reasons(full)
    differ = {
        k: (f"{vf.get(k)} ({rf.get(k)})", f"{vb.get(k)} ({rb.get(k)})")
        for k in sorted(set(vb) | set(vf))
        if vb.get(k) != vf.get(k)
    }

    def leaks(r: Any) -> List[Tuple[Any, ...]]:
        return sorted(
            (f.pid, f.signal, (f.culprit or {}).get("holder"), (f.culprit or {}).get("type"))
            for f in r.findings
            if f.verdict == "leak"
        )

    same = full.verdict == bounded.verdict and not differ and leaks(full) == leaks(bounded)
    out = {
        "full_verdict": full.verdict,
        "bounded_verdict": bounded.verdict,
        "signals_compared": len(vf),
        "signals_differ": differ,
        "leaks_full": leaks(full),
        "leaks_bounded": leaks(bounded),
        "same": same,
        "full_points": max(len(s.value) for p in full.processes for s in p.series.values()),
        "full_censuses": [len(p.census) for p in full.processes],
        "full_s": took,
    }
    print(
        f"  full resolution ({out['full_points']:,} points, censuses {out['full_censuses']}): "
        f"verdict {full.verdict}; bounded {bounded.verdict}; {len(differ)} of {len(vf)} "
        f"signal verdicts differ; leak findings same: {leaks(full) == leaks(bounded)} "
        f"({took:.1f} s)",
        file=sys.stderr,
        flush=True,
    )
    for k, (a, b) in list(differ.items())[:10]:
        print(f"    {k}: full {a} / bounded {b}", file=sys.stderr)
    return out


_REAL = r"""
import time, sys
import memprobe
n = int(sys.argv[1])
spin = float(sys.argv[2]) * 1e-6
buf, keep = [], []
t0 = time.perf_counter()
for i in range(n):
    end = time.perf_counter() + spin
    while time.perf_counter() < end:
        pass
    buf.append(i)
    if len(buf) >= 5000:   # a buffer that fills and is cleared: comes and goes
        buf.clear()
    if i % 100 == 0:
        keep.append(bytearray(64))  # a slow creep of small objects
    memprobe.step()
print("loop_s", time.perf_counter() - t0, "t1", time.time(), flush=True)
"""


def real(steps: int, step_us: float, interval: float) -> Dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="memprobe-long-real-")
    script = os.path.join(tmp, "fast_steps.py")
    with open(script, "w") as f:
        f.write(_REAL)
    out = os.path.join(tmp, "run.json")
    cmd = [
        sys.executable,
        "-m",
        "memprobe",
        "run",
        "--no-live",
        "--keep-run-dir",
        "--interval",
        str(interval),
        "-o",
        out,
        script,
        str(steps),
        str(step_us),
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ps = psutil.Process(proc.pid)
    polls: List[Tuple[float, float, float]] = []
    while proc.poll() is None:
        try:
            c = ps.cpu_times()
            polls.append((time.perf_counter() - t0, ps.memory_info().rss / MB, c.user + c.system))
        except psutil.Error:
            break
        time.sleep(1.0)
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(stderr[-2000:])
    line = next(ln for ln in stdout.splitlines() if ln.startswith("loop_s"))
    loop_s, t1 = float(line.split()[1]), float(line.split()[3])
    wait = time.time() - t1  # close enough: we read after exit
    run_dir = out[:-5] + ".run"
    lines = sum(1 for p in Path(run_dir).glob("proc-*.jsonl") for _ in open(p))
    raw_mb = sum(p.stat().st_size for p in Path(run_dir).iterdir()) / MB
    with open(out) as f:
        record = json.load(f)
    rss = [r for _, r, _ in polls]
    quarter = max(1, len(rss) // 4)
    cpu = [(t, c) for t, _, c in polls]
    res = {
        "steps": steps,
        "loop_s": loop_s,
        "wall_s": wall,
        "wait_after_loop_s": wait,
        "run_json_bytes": os.path.getsize(out),
        "raw_lines": lines,
        "raw_mb": raw_mb,
        "verdict": record["verdict"],
        "parent_rss_first_quarter_mb": statistics.median(rss[:quarter]) if rss else None,
        "parent_rss_last_quarter_mb": statistics.median(rss[-quarter:]) if rss else None,
        "parent_cpu_share": (cpu[-1][1] - cpu[0][1]) / (cpu[-1][0] - cpu[0][0])
        if len(cpu) > 1
        else None,
    }
    print(
        f"  real: {steps:,} steps in {loop_s:.1f} s; {lines:,} lines ({raw_mb:.1f} MB) in the "
        f"run folder; run.json {res['run_json_bytes'] / MB:.2f} MB; verdict {res['verdict']}; "
        f"parent RSS {res['parent_rss_first_quarter_mb']:.0f} -> "
        f"{res['parent_rss_last_quarter_mb']:.0f} MB; parent CPU "
        f"{100 * (res['parent_cpu_share'] or 0):.1f} % of a core; wait after loop "
        f"{wait:.2f} s",
        file=sys.stderr,
    )
    return res


def report(results: Dict[str, Any]) -> str:
    lines = []
    for r in results.get("compressed", []):
        rows = r["rows"]
        pick = [rows[i] for i in sorted({0, len(rows) // 4, len(rows) // 2, len(rows) - 1})]
        lines += [
            f"### {r['hours']} h compressed, scenario {r['scenario']}: {r['messages']:,} messages",
            "",
            "| hour | parent RSS Δ | ingest µs/msg | table update | live judge | build |",
            "|---|---|---|---|---|---|",
        ]
        for row in pick:
            lines.append(
                f"| {row['hour']} | {row['parent_rss_mb']:+.1f} MB | "
                f"{row['ingest_us_per_msg']:.1f} | {row['table_ms']:.1f} ms | "
                f"{row['judge_ms']:.0f} ms | {row['build_ms']:.0f} ms |"
            )
        full = r.get("full") or {}
        lines += [
            "",
            f"- end of run: build {r['end_build_s']:.2f} s, analysis {r['end_analysis_s']:.2f} s,"
            f" total wait {r['end_total_s']:.2f} s; run.json {r['run_json_bytes'] / MB:.2f} MB "
            f"(≤ {r['points']:,} points per series, censuses kept {r['censuses']})",
            f"- verdict {r['verdict']}; leak findings: {r['findings']}",
        ]
        if full and "skipped" not in full:
            lines.append(
                f"- full resolution (≤ {full['full_points']:,} points, censuses "
                f"{full['full_censuses']}): verdict {full['full_verdict']}; "
                f"{len(full['signals_differ'])} of {full['signals_compared']} signal verdicts "
                f"differ; leak findings identical: {full['leaks_full'] == full['leaks_bounded']}"
            )
        lines.append("")
    real_r = results.get("real")
    if real_r:
        lines += [
            f"### real: {real_r['steps']:,} steps under memprobe run",
            "",
            f"- loop {real_r['loop_s']:.1f} s, {real_r['raw_lines']:,} lines in the run folder "
            f"({real_r['raw_mb']:.1f} MB); run.json {real_r['run_json_bytes'] / MB:.2f} MB; "
            f"verdict {real_r['verdict']}",
            f"- parent RSS {real_r['parent_rss_first_quarter_mb']:.0f} MB (first quarter) -> "
            f"{real_r['parent_rss_last_quarter_mb']:.0f} MB (last quarter); parent CPU "
            f"{100 * (real_r['parent_cpu_share'] or 0):.1f} % of a core; wait after the loop "
            f"{real_r['wait_after_loop_s']:.2f} s",
        ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--scenario", nargs="+", default=["leak", "noleak"], choices=["leak", "noleak"])
    ap.add_argument("--leak-from", type=float, default=12.0, help="hour the leak starts")
    ap.add_argument("--no-full-check", action="store_true")
    ap.add_argument("--real", action="store_true", help="also a real run of --steps steps")
    ap.add_argument("--only-real", action="store_true")
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--step-us", type=float, default=50.0, help="busy work per step")
    ap.add_argument("--interval", type=float, default=0.1, help="memprobe run --interval")
    ap.add_argument("--json", help="also write the raw results here")
    args = ap.parse_args()
    results: Dict[str, Any] = {"argv": sys.argv, "date": time.strftime("%Y-%m-%d %H:%M %Z")}
    if not args.only_real:
        results["compressed"] = [
            compressed(args.hours, s, args.leak_from, not args.no_full_check) for s in args.scenario
        ]
    if args.real or args.only_real:
        results["real"] = real(args.steps, args.step_us, args.interval)
    print(report(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)


if __name__ == "__main__":
    main()
