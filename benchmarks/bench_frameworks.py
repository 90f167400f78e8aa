"""Unmodified Hugging Face Trainer, Lightning and accelerate scripts, repeated, with and without
memprobe: the framework's own step count against memprobe's, the verdict of the leaky script
and of its fixed twin in every round, the holder named, and the wall-time ratio.

    OMP_NUM_THREADS=1 /path/to/venv-with-frameworks/bin/python benchmarks/bench_frameworks.py \\
        --rounds 3 --markdown
    ... --fixed-only --scale 4 --rounds 2     # ~60 s runs of the fixed twins: the overhead
    ... --fixed-only --side-by-side ...        # plain and memprobe at once, one core each
    ... --fixed-only --pairs 4 ...             # 4 such pairs at once (a many-core machine)
    ... --memprobe-args='--tracemalloc off'    # memprobe run's own options, for an ablation

Besides wall time it reports CPU time (user + system of memprobe, the target and their
children, from ``wait4``): on a machine others share, wall time moves
with their load, CPU time far less. "target's CPU" is the target process alone, as its agent
read it at exit, against the plain run's: what memprobe costs inside the program, without
its own parent's CPU. "target's wall" is the target's own run, from its spawn to its exit
(the record's ``duration_s``), against the plain run's wall: memprobe's own start-up before the
spawn and its analysis after the exit are left out.

The frameworks are not memprobe's dependencies: run it with an interpreter that has them
(``pip install -e '.[frameworks]'``); a framework that is missing is reported and skipped.
Scripts: ``sample_scripts/frameworks/*.py`` (each takes ``--steps`` and ``--fixed`` and
prints ``global steps: N``, the framework's own count of optimizer steps).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = ROOT / "sample_scripts" / "frameworks"
# script, the module it needs, steps per run
CASES: List[Tuple[str, str, int]] = [
    ("hf_trainer_callback.py", "transformers", 400),
    ("lightning_losses.py", "lightning", 3000),
    ("accelerate_running_loss.py", "accelerate", 4000),
]


@dataclass
class Outcome:
    verdict: str = "-"
    steps: Optional[int] = None  # memprobe's count for the main process
    counted: Optional[int] = None  # the framework's own
    holder: str = ""
    line: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0
    agent_share: Optional[float] = None  # the agent's own CPU, % of one core over the run
    target_cpu: Optional[float] = None  # the target process' own CPU, from its agent at exit
    target_wall: Optional[float] = None  # the target's run, spawn to exit (the record's)


@dataclass
class Row:
    script: str
    plain_s: List[float] = field(default_factory=list)
    leak: List[Outcome] = field(default_factory=list)
    fixed: List[Outcome] = field(default_factory=list)
    fixed_plain_s: List[float] = field(default_factory=list)
    plain_cpu: List[float] = field(default_factory=list)
    fixed_plain_cpu: List[float] = field(default_factory=list)


def _env() -> Dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


def _agent_cost(record: Dict[str, object], pattern: str) -> Optional[float]:
    """A figure of the main process' ``agent_cost`` event (what its agent measured at
    exit), the first group of ``pattern`` in its message."""
    events = record.get("events")
    for e in events if isinstance(events, list) else []:
        if isinstance(e, dict) and e.get("kind") == "agent_cost":
            found = re.search(pattern, str(e.get("message", "")))
            if found:
                return float(found.group(1))
    return None


# the CPU the agent measured itself using, as a share of one core over the run (a figure
# the machine's load moves far less than a comparison of two runs)
AGENT_SHARE = r"\(([\d.]+) % of one core\)"
# the main process' CPU seconds at exit: the target alone, without memprobe's parent (it
# leaves out the interpreter's teardown after that, which the plain run's ``wait4`` holds)
TARGET_CPU = r"the process used ([\d.]+) s of CPU"


def _counted(stdout: str) -> Optional[int]:
    found = re.findall(r"global steps: (\d+)", stdout)
    return int(found[-1]) if found else None


class Timed:
    """A child process timed on its own: wall from its start to its exit, CPU from
    ``wait4``'s rusage (it and the descendants it waited for), so several children can run
    side by side. A thread waits for each, so an exit is timed when it happens, not when
    the caller gets round to it."""

    def __init__(self, cmd: List[str]) -> None:
        self.out = tempfile.TemporaryFile(mode="w+")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            cmd, stdout=self.out, stderr=subprocess.STDOUT, text=True, env=_env()
        )
        self._ended: Tuple[int, float, float] = (0, 0.0, 0.0)
        self._waiter = threading.Thread(target=self._reap, daemon=True)
        self._waiter.start()

    def _reap(self) -> None:
        _, status, ru = os.wait4(self.proc.pid, 0)
        self._ended = (status, time.monotonic() - self.t0, ru.ru_utime + ru.ru_stime)

    def wait(self) -> Tuple[int, float, float, str]:
        """(exit status, wall seconds, CPU seconds, output)."""
        self._waiter.join()
        status, wall, cpu = self._ended
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.out.seek(0)
        text = self.out.read()
        self.out.close()
        return self.proc.returncode, wall, cpu, text


def plain_cmd(script: str, steps: int, fixed: bool) -> List[str]:
    cmd = [sys.executable, str(FRAMEWORKS / script), "--steps", str(steps)]
    return cmd + (["--fixed"] if fixed else [])


# memprobe run's own options for every memprobe run (--memprobe-args)
MEMPROBE_ARGS: List[str] = []


def memprobe_cmd(script: str, steps: int, fixed: bool, out: Path) -> List[str]:
    cmd = [sys.executable, "-m", "memprobe", "run", "-o", str(out), *MEMPROBE_ARGS]
    return cmd + [str(FRAMEWORKS / script), "--steps", str(steps)] + (["--fixed"] if fixed else [])


def record_name(out_dir: Path, script: str, fixed: bool) -> Path:
    return out_dir / f"{script}-{'fixed' if fixed else 'leak'}-{time.monotonic_ns()}.json"


def plain_done(child: Timed) -> Tuple[float, float]:
    rc, wall, cpu, text = child.wait()
    if rc != 0:
        raise RuntimeError(f"plain run failed ({rc}): {text[-500:]}")
    return wall, cpu


def memprobe_done(child: Timed, out: Path) -> Outcome:
    rc, wall, cpu, text = child.wait()
    if rc != 0 or not out.exists():
        return Outcome(verdict=f"rc {rc}", wall_s=wall, cpu_s=cpu)
    rec = json.loads(out.read_text())
    main = next((p for p in rec["processes"] if p.get("role") == "main"), rec["processes"][0])
    leaks = [f for f in rec["findings"] if f.get("verdict") == "leak"]
    culprit = (leaks[0].get("culprit") or {}) if leaks else {}
    return Outcome(
        verdict=rec["verdict"],
        steps=main.get("steps"),
        counted=_counted(text),
        holder=str(culprit.get("holder") or ""),
        line=str(culprit.get("location") or ""),
        wall_s=wall,
        cpu_s=cpu,
        agent_share=_agent_cost(rec, AGENT_SHARE),
        target_cpu=_agent_cost(rec, TARGET_CPU),
        target_wall=rec.get("duration_s"),
    )


def run_pairs(
    script: str, steps: int, fixed: bool, out_dir: Path, pairs: int, memprobe_first: bool
) -> List[Tuple[Tuple[float, float], Outcome]]:
    """Plain runs and memprobe runs of one script: one after the other (``pairs`` 0), or
    ``pairs`` of each side by side (each on its own core, all under whatever load the machine
    has at that moment)."""
    if pairs == 0:
        out = record_name(out_dir, script, fixed)
        first = plain_done(Timed(plain_cmd(script, steps, fixed)))
        return [(first, memprobe_done(Timed(memprobe_cmd(script, steps, fixed, out)), out))]
    started: List[Tuple[Timed, Timed, Path]] = []
    for i in range(pairs):
        out = record_name(out_dir, script, fixed)
        # the later one starts a moment after the first: alternate which is first
        if memprobe_first == (i % 2 == 0):
            mp = Timed(memprobe_cmd(script, steps, fixed, out))
            plain = Timed(plain_cmd(script, steps, fixed))
        else:
            plain = Timed(plain_cmd(script, steps, fixed))
            mp = Timed(memprobe_cmd(script, steps, fixed, out))
        started.append((plain, mp, out))
    return [(plain_done(plain), memprobe_done(mp, out)) for plain, mp, out in started]


def bench(
    rounds: int,
    out_dir: Path,
    only: Optional[str],
    scale: float = 1.0,
    fixed_only: bool = False,
    pairs: int = 0,
) -> Tuple[List[Row], List[str]]:
    rows: List[Row] = []
    missing: List[str] = []
    for script, module, steps in CASES:
        if only and only not in script:
            continue
        if importlib.util.find_spec(module) is None:
            missing.append(module)
            continue
        row = Row(script)
        steps = int(steps * scale)
        # interleaved: plain and memprobe back to back (or side by side) each round
        for r in range(rounds):
            if not fixed_only:
                for (wall, cpu), outcome in run_pairs(
                    script, steps, False, out_dir, pairs, r % 2 == 1
                ):
                    row.plain_s.append(wall)
                    row.plain_cpu.append(cpu)
                    row.leak.append(outcome)
            for (wall, cpu), outcome in run_pairs(script, steps, True, out_dir, pairs, r % 2 == 1):
                row.fixed_plain_s.append(wall)
                row.fixed_plain_cpu.append(cpu)
                row.fixed.append(outcome)
                print(
                    f"[{script} round {r + 1}] leak: {row.leak[-1].verdict if row.leak else '-'} "
                    f"fixed: {row.fixed[-1].verdict} (plain {wall:.1f} s, "
                    f"memprobe {row.fixed[-1].wall_s:.1f} s)",
                    file=sys.stderr,
                    flush=True,
                )
        rows.append(row)
    return rows, missing


def _ratio(with_tool: Sequence[Optional[float]], plain: Sequence[float]) -> str:
    ratios = sorted(w / p for w, p in zip(with_tool, plain) if w is not None and p > 0)
    if not ratios:
        return "-"
    return f"{statistics.median(ratios):.2f}× ({ratios[0]:.2f}–{ratios[-1]:.2f})"


def _shares(values: Sequence[Optional[float]]) -> str:
    known = sorted(v for v in values if v is not None)
    if not known:
        return "-"
    return f"{statistics.median(known):.1f} % ({known[0]:.1f}–{known[-1]:.1f})"


def render(rows: List[Row], markdown: bool) -> str:
    head = [
        "script",
        "steps (memprobe / framework)",
        "leaky: verdicts",
        "holder",
        "line",
        "fixed: verdicts",
        "wall, leaky",
        "wall, fixed",
        "CPU, leaky",
        "CPU, fixed",
        "target's wall, fixed",
        "target's CPU, fixed",
        "agent's own CPU, fixed",
        "plain, fixed",
    ]
    body = []
    for row in rows:
        steps = sorted({f"{o.steps}/{o.counted}" for o in row.leak + row.fixed})
        holders = sorted({o.holder or "-" for o in row.leak})
        lines = sorted({o.line or "-" for o in row.leak})
        body.append(
            [
                row.script,
                ", ".join(steps),
                " ".join(o.verdict for o in row.leak),
                " / ".join(holders),
                " / ".join(lines),
                " ".join(o.verdict for o in row.fixed),
                _ratio([o.wall_s for o in row.leak], row.plain_s),
                _ratio([o.wall_s for o in row.fixed], row.fixed_plain_s),
                _ratio([o.cpu_s for o in row.leak], row.plain_cpu),
                _ratio([o.cpu_s for o in row.fixed], row.fixed_plain_cpu),
                _ratio([o.target_wall for o in row.fixed], row.fixed_plain_s),
                _ratio([o.target_cpu for o in row.fixed], row.fixed_plain_cpu),
                _shares([o.agent_share for o in row.fixed]),
                f"{statistics.median(row.fixed_plain_s):.1f} s" if row.fixed_plain_s else "-",
            ]
        )
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(r) + " |" for r in body]
        return "\n".join(out)
    return "\n".join("  ".join(r) for r in [head] + body)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", help="run the scripts whose name contains this")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--records-dir", help="keep the run records here")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every script's steps")
    ap.add_argument("--fixed-only", action="store_true", help="only the fixed twins")
    ap.add_argument(
        "--side-by-side",
        action="store_true",
        help="run each plain run and its memprobe run at the same time, one core each, "
        "so both see the same load (needs 2 free cores; memprobe's own parent shares them)",
    )
    ap.add_argument(
        "--pairs",
        type=int,
        default=0,
        help="side by side, this many plain runs and memprobe runs at once (needs twice as "
        "many free cores)",
    )
    ap.add_argument(
        "--memprobe-args",
        default="",
        help="options for every memprobe run, as one string ('--tracemalloc off --budget 0.01')",
    )
    args = ap.parse_args(argv)
    MEMPROBE_ARGS[:] = args.memprobe_args.split()
    pairs = max(args.pairs, 1 if args.side_by_side else 0)
    out_dir = Path(args.records_dir or tempfile.mkdtemp(prefix="bench-frameworks-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    rows, missing = bench(args.rounds, out_dir, args.only, args.scale, args.fixed_only, pairs)
    print(render(rows, args.markdown))
    if missing:
        print(f"not installed, skipped: {', '.join(missing)}")
    print(f"records: {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
