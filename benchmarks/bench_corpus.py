"""Run ``memprobe run`` over the sample corpora and print one results table.

    OMP_NUM_THREADS=1 python benchmarks/bench_corpus.py                 # both corpora, idle
    python benchmarks/bench_corpus.py --corpus heldout --markdown --out results.json
    python benchmarks/bench_corpus.py --busy --only rnn                 # a loaded machine
    python benchmarks/bench_corpus.py --plain --corpus heldout          # no memprobe: RSS only

Corpora: ``sample_scripts/leak_*.py`` / ``ok_*.py`` (the developers' corpus, "sample")
``sample_scripts/heldout/`` (a held-out corpus written without reading the
detector, "heldout") and ``sample_scripts/fresh/`` (a third one, written by another
author after the detector work on the first two, never tuned against: "fresh").
A script's expectation comes from its header comments::

    # expect: leak            (or: no_leak; without it, the file name's leak_/ok_ prefix)
    # holder: main:losses     (alternatives separated by |; case-insensitive substring)
    # pattern: retained graphs via a main()-local list
    # step_ms: 5

Per script the table gives the expected and the recorded verdict (``record["verdict"]``),
whether they agree, and for leaks when the verdict *first became leak and stayed leak*:
the record is cut at ~40 times T of the run's clock (every series, census and event of
every process cut to ``t <= T``), each cut is re-analysed with
``memprobe.analysis.analyze``, and the earliest T from which every later cut says
"leak" is reported, in seconds and as a step (interpolated between the main process'
step-tagged samples; "-" when it has none). The same replay tells whether a correct
script was *ever* called a leak along the way. A second replay shows what the live
table's header said: judged at the table's pace (every 2 s at most, never above 5 % of a
core) and through its hold (``memprobe.analysis.LiveJudge``): "ever shown" for a correct
script, "shown from s" for a leak. Then: the holder of the first leak
finding and whether it matches ``# holder:``, the retained bytes if the finding
reports them, the wall time and memprobe's exit code (the scripts all exit 0, so
anything else is memprobe failing them). Only ``memprobe.record.load``,
``memprobe.analysis.analyze`` and ``LiveJudge`` (with the table's pace) are used from
memprobe's internals; everything else comes from the JSON.

``--busy`` starts one ``python -c 'while True: pass'`` per core beside each run
(killed afterwards): the busy machine users have. ``--plain`` runs the scripts
without memprobe and samples their RSS (and their children's USS) every 0.2 s,
to check that a leak really grows and a correct script really does not.
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import psutil

from memprobe.analysis import analyze
from memprobe.record import Event, Process, RunRecord, Series, load

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_scripts"
HELDOUT = SAMPLES / "heldout"
FRESH = SAMPLES / "fresh"
# four more, each written by another author, after the work on the first three, told to
# write as other people write and never shown the detector ("wild_a" .. "wild_d"); three
# more the same way in stop 30 ("wild_e" .. "wild_g"), two in stop 31 ("wild_h", "wild_i"),
# one in stop 32 ("wild_j"), one in stop 33 ("wild_k"), one in stop 34 ("wild_l"), one in
# stop 35 ("wild_m"), one in stop 36 ("wild_n"), two in stop 37 ("wild_o", and "wild_p"
# of correct scripts only), two in stop 38 ("wild_q", and "wild_r" of mostly correct
# scripts), two in stop 39 ("wild_s", "wild_t"), two in stop 40 ("wild_u", "wild_v") and
# two in stop 41 ("wild_w", "wild_x"), two in stop 42 ("wild_y", "wild_z") and three in
# stop 43 ("wild_aa", "wild_ab", "wild_ac"), run before any change made for them
CORPORA = {
    "sample": SAMPLES,
    "heldout": HELDOUT,
    "fresh": FRESH,
    "wild_a": SAMPLES / "wild_a",
    "wild_b": SAMPLES / "wild_b",
    "wild_c": SAMPLES / "wild_c",
    "wild_d": SAMPLES / "wild_d",
    "wild_e": SAMPLES / "wild_e",
    "wild_f": SAMPLES / "wild_f",
    "wild_g": SAMPLES / "wild_g",
    "wild_h": SAMPLES / "wild_h",
    "wild_i": SAMPLES / "wild_i",
    "wild_j": SAMPLES / "wild_j",
    "wild_k": SAMPLES / "wild_k",
    "wild_l": SAMPLES / "wild_l",
    "wild_m": SAMPLES / "wild_m",
    "wild_n": SAMPLES / "wild_n",
    "wild_o": SAMPLES / "wild_o",
    "wild_p": SAMPLES / "wild_p",
    "wild_q": SAMPLES / "wild_q",
    "wild_r": SAMPLES / "wild_r",
    "wild_s": SAMPLES / "wild_s",
    "wild_t": SAMPLES / "wild_t",
    "wild_u": SAMPLES / "wild_u",
    "wild_v": SAMPLES / "wild_v",
    "wild_w": SAMPLES / "wild_w",
    "wild_x": SAMPLES / "wild_x",
    "wild_y": SAMPLES / "wild_y",
    "wild_z": SAMPLES / "wild_z",
    "wild_aa": SAMPLES / "wild_aa",
    "wild_ab": SAMPLES / "wild_ab",
    "wild_ac": SAMPLES / "wild_ac",
}
N_CUTS = 40
HEADER_LINES = 12
STDERR_TAIL = 3000
MiB = 2**20


# ---------------------------------------------------------------------------- scripts


@dataclass
class Script:
    path: Path
    corpus: str
    expect: str  # "leak" | "no_leak"
    holders: List[str]  # empty: no holder given
    pattern: str
    step_ms: Optional[float]

    @property
    def name(self) -> str:
        return self.path.name


def _header(path: Path) -> Dict[str, str]:
    meta: Dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for _, line in zip(range(HEADER_LINES), f):
            m = re.match(r"#\s*(expect|holder|pattern|step_ms)\s*:\s*(.*?)\s*$", line)
            if m:
                meta.setdefault(m.group(1), m.group(2))
    return meta


def _first_doc_line(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    m = re.search(r'"""\s*(.+)', text)
    return m.group(1).strip() if m else ""


def load_script(path: Path, corpus: str) -> Script:
    meta = _header(path)
    expect = meta.get("expect") or ("leak" if path.name.startswith("leak_") else "no_leak")
    if expect not in ("leak", "no_leak"):
        raise SystemExit(f"{path}: '# expect: {expect}' is neither leak nor no_leak")
    holders = [h.strip() for h in meta.get("holder", "").split("|") if h.strip()]
    step_ms: Optional[float] = None
    try:
        step_ms = float(meta["step_ms"]) if "step_ms" in meta else None
    except ValueError:
        pass
    return Script(
        path, corpus, expect, holders, meta.get("pattern") or _first_doc_line(path), step_ms
    )


def discover(corpus: str, only: Optional[str]) -> List[Script]:
    names = list(CORPORA) if corpus == "all" else [corpus]
    scripts: List[Script] = []
    for name in names:
        folder = CORPORA[name]
        paths = sorted(folder.glob("leak_*.py")) + sorted(folder.glob("ok_*.py"))
        wanted = only.split(",") if only else []
        scripts += [
            load_script(p, name) for p in paths if not wanted or any(w in p.name for w in wanted)
        ]
    return scripts


# ---------------------------------------------------------------------------- load


class Burners:
    """One busy-looping process per core (``--busy``), killed on exit."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: List[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Burners:
        for _ in range(self.n):
            self.procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", "while True: pass"],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            p.wait()
        self.procs.clear()


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = "1"
    env.pop("MEMPROBE_CONFIG", None)
    env.pop("MEMPROBE_RUN_DIR", None)
    return env


def _run_command(
    cmd: Sequence[str], timeout: float, stdout_path: Path, stderr_path: Path
) -> Tuple[Optional[int], float, bool]:
    """(exit code or None on timeout, wall seconds, timed out). Output goes to files."""
    t0 = time.perf_counter()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = subprocess.Popen(
            list(cmd),
            cwd=ROOT,
            env=_env(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,  # its own process group: a timeout kills it all
        )
        try:
            rc: Optional[int] = proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            rc, timed_out = None, True
    return rc, time.perf_counter() - t0, timed_out


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _tail(path: Path, n: int = STDERR_TAIL) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-n:].decode("utf-8", "replace")


# ---------------------------------------------------------------------------- replay


def _cut_record(record: RunRecord, t_cut: float) -> RunRecord:
    """The record as it would have been at ``t_cut`` s into the run (findings dropped)."""
    procs: List[Process] = []
    for p in record.processes:
        series: Dict[str, Series] = {}
        for name, s in p.series.items():
            keep = [i for i, t in enumerate(s.t) if t <= t_cut]
            cut = Series(
                step=[s.step[i] for i in keep],
                t=[s.t[i] for i in keep],
                value=[s.value[i] for i in keep],
            )
            if cut.t:
                series[name] = cut
        if not series:
            continue  # the process had not started yet (or had no samples by then)
        census = [c for c in p.census if _num(c.get("t"), float("inf")) <= t_cut]
        steps = [st for s in series.values() for st in s.step if st is not None]
        last_t = max(s.t[-1] for s in p.series.values() if s.t)
        procs.append(
            dataclasses.replace(
                p,
                series=series,
                census=census,
                steps=max(steps) if steps else 0,
                ended=p.ended if t_cut >= last_t else None,
            )
        )
    events: List[Event] = [e for e in record.events if e.t <= t_cut]
    return dataclasses.replace(
        record,
        processes=procs,
        events=events,
        findings=[],
        signals={},
        verdict="inconclusive",
        duration_s=min(record.duration_s, t_cut),
    )


def _num(v: Any, default: float) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def _main_process(record: RunRecord) -> Optional[Process]:
    mains = [p for p in record.processes if p.role == "main"]
    return mains[0] if mains else (record.processes[0] if record.processes else None)


def _step_at(main: Process, t: float) -> Optional[float]:
    """Step of the main process at time t, interpolated between step-tagged samples."""
    pairs = sorted(
        {(ti, st) for s in main.series.values() for ti, st in zip(s.t, s.step) if st is not None}
    )
    if not pairs:
        return None
    ts = [a for a, _ in pairs]
    k = bisect.bisect_right(ts, t)
    if k == 0:
        return None
    if k == len(pairs):
        return float(pairs[-1][1])
    (t0, s0), (t1, s1) = pairs[k - 1], pairs[k]
    if t1 <= t0:
        return float(s0)
    return s0 + (s1 - s0) * (t - t0) / (t1 - t0)


@dataclass
class Replay:
    cuts: List[Tuple[float, str]]  # (T, verdict) in time order
    first_stable_leak_t: Optional[float]
    first_stable_leak_step: Optional[float]
    ever_leak: bool
    final_replayed: str
    error: Optional[str] = None
    # what the live table showed: its judgements, at its pace, through its hysteresis
    shown: List[Tuple[float, str]] = field(default_factory=list)
    shown_leak_t: Optional[float] = None  # shown leak from then to the end
    ever_shown: bool = False


def replay(record_path: Path, n_cuts: int = N_CUTS) -> Replay:
    record = load(str(record_path))
    times = sorted({t for p in record.processes for s in p.series.values() for t in s.t})
    if not times:
        return Replay([], None, None, record.verdict == "leak", record.verdict, "no samples")
    t_start, t_end = times[0], times[-1]
    grid = [t_start + (t_end - t_start) * (i + 1) / n_cuts for i in range(n_cuts)]
    grid[-1] = t_end
    cuts: List[Tuple[float, str]] = []
    errors: List[str] = []
    for t in grid:
        try:
            cuts.append((t, analyze(_cut_record(record, t)).verdict))
        except Exception as e:  # analysis failing on a partial record is worth reporting
            cuts.append((t, "error"))
            errors.append(f"analyze() at t={t:.1f}s: {type(e).__name__}: {e}")
    first = _leak_from(cuts)
    main = _main_process(record)
    step = _step_at(main, first) if first is not None and main is not None else None
    ever = any(v == "leak" for _, v in cuts) or record.verdict == "leak"
    rp = Replay(cuts, first, step, ever, cuts[-1][1], "; ".join(errors[:3]) or None)
    try:
        rp.shown = shown_replay(record, t_start, t_end)
    except Exception as e:
        errors.append(f"live replay: {type(e).__name__}: {e}")
        rp.error = "; ".join(errors[:3])
    rp.shown_leak_t = _leak_from(rp.shown)
    rp.ever_shown = any(v == "leak" for _, v in rp.shown)
    return rp


def _leak_from(seq: List[Tuple[float, str]]) -> Optional[float]:
    """The earliest time from which every later verdict of ``seq`` is leak; None if none."""
    first: Optional[float] = None
    for t, v in reversed(seq):
        if v != "leak":
            break
        first = t
    return first


def shown_replay(record: RunRecord, t_start: float, t_end: float) -> List[Tuple[float, str]]:
    """The run verdict the live table's header showed along the run: the table judges the
    series so far at most every MIN_INTERVAL_S and never above JUDGE_SHARE of a core (the
    cost here is analyze()'s alone, less than the table's: judged more often, so a flag shows
    no later than it would live), and a signal's shown verdict changes only after it held
    (analysis.LiveJudge). The record's final verdict is not part of it."""
    from memprobe.analysis import LiveJudge as Stable
    from memprobe.render.livejudge import JUDGE_SHARE, MIN_INTERVAL_S

    stable = Stable()
    shown: List[Tuple[float, str]] = []
    t = t_start
    while t <= t_end:
        began = time.perf_counter()
        result = analyze(_cut_record(record, t))
        cost = time.perf_counter() - began
        for (pid, name), v in result.verdicts.items():
            stable.observe(pid, name, v)
        shown.append((t, stable.run_verdict()))
        t += max(MIN_INTERVAL_S, cost / JUDGE_SHARE)
    return shown


# ---------------------------------------------------------------------------- findings


def _leak_holder(findings: List[Dict[str, Any]]) -> Optional[str]:
    """The first leak finding's holder, with the classes whose attributes its path reads
    where the finding says them: ``main:prof.records (CallProfiler.records)``."""
    leaks = [f for f in findings if f.get("kind", "leak") == "leak"]
    for f in leaks[:1] + findings:
        holder = (f.get("culprit") or {}).get("holder")
        if holder:
            types = (f.get("evidence") or {}).get("holder_types")
            if isinstance(types, list) and types:
                return f"{holder} ({' › '.join(str(t) for t in types)})"
            return str(holder)
    return None


def _retained_bytes(findings: List[Dict[str, Any]]) -> Optional[float]:
    leaks = [f for f in findings if f.get("kind", "leak") == "leak"] or findings
    for f in leaks:
        for where in (f, f.get("culprit") or {}, f.get("evidence") or {}):
            v = where.get("retained_bytes") if isinstance(where, dict) else None
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return float(v)
    return None


def holder_matches(holder: Optional[str], wanted: List[str]) -> Optional[bool]:
    if not wanted:
        return None
    if not holder:
        return False
    return any(w.lower() in holder.lower() for w in wanted)


# ---------------------------------------------------------------------------- one run


@dataclass
class Result:
    script: str
    corpus: str
    expect: str
    pattern: str
    step_ms: Optional[float]
    holders_expected: List[str]
    verdict: Optional[str] = None
    correct: bool = False
    detect_s: Optional[float] = None
    detect_step: Optional[float] = None
    ever_leak: Optional[bool] = None
    replay_final: Optional[str] = None
    ever_shown: Optional[bool] = None  # the live table's header said LEAK at some point
    shown_detect_s: Optional[float] = None  # ... and from then to the end
    cuts: List[Tuple[float, str]] = field(default_factory=list)
    holder: Optional[str] = None
    holder_ok: Optional[bool] = None
    retained_bytes: Optional[float] = None
    duration_s: Optional[float] = None
    steps: Optional[int] = None
    wall_s: float = 0.0
    rc: Optional[int] = None
    target_exit: Optional[Dict[str, Any]] = None
    timed_out: bool = False
    failure: Optional[str] = None  # memprobe failed the run: non-zero exit, traceback, no record
    stderr_tail: str = ""
    record_path: Optional[str] = None
    rss_plain: Optional[Dict[str, Any]] = None
    replay_error: Optional[str] = None


def run_one(script: Script, out_dir: Path, timeout: float, busy: int) -> Result:
    res = Result(
        script.name, script.corpus, script.expect, script.pattern, script.step_ms, script.holders
    )
    stem = f"{script.corpus}-{script.path.stem}"
    record_path = out_dir / f"{stem}.json"
    if record_path.exists():
        record_path.unlink()
    cmd = [sys.executable, "-m", "memprobe", "run", "-o", str(record_path), str(script.path)]
    with Burners(busy):
        rc, wall, timed_out = _run_command(
            cmd, timeout, out_dir / f"{stem}.stdout", out_dir / f"{stem}.stderr"
        )
    res.rc, res.wall_s, res.timed_out = rc, wall, timed_out
    stderr = _tail(out_dir / f"{stem}.stderr")
    problems = []
    if timed_out:
        problems.append(f"timed out after {timeout:.0f}s")
    elif rc != 0:
        problems.append(f"memprobe exit code {rc}")
    if "Traceback (most recent call last)" in stderr:
        problems.append("traceback on stderr")
    if not record_path.exists():
        problems.append("no run record written")
    else:
        res.record_path = str(record_path)
        try:
            _read_record(res, record_path, script)
        except Exception as e:  # a record the harness cannot read is a finding too
            problems.append(f"record unreadable: {type(e).__name__}: {e}")
    exit_info = res.target_exit or {}
    if exit_info.get("signal") is not None:
        problems.append(f"target killed by signal {exit_info['signal']}")
    if problems:
        res.failure = "; ".join(problems)
        res.stderr_tail = stderr
    return res


def _read_record(res: Result, record_path: Path, script: Script) -> None:
    with open(record_path, encoding="utf-8") as f:
        rec = json.load(f)
    res.verdict = rec.get("verdict")
    res.correct = res.verdict == script.expect
    res.duration_s = rec.get("duration_s")
    res.target_exit = rec.get("exit")
    mains = [p for p in rec.get("processes", []) if p.get("role") == "main"]
    res.steps = mains[0].get("steps") if mains else None
    findings = rec.get("findings") or []
    res.holder = _leak_holder(findings)
    res.holder_ok = holder_matches(res.holder, script.holders) if script.expect == "leak" else None
    res.retained_bytes = _retained_bytes(findings)
    rp = replay(record_path)
    res.replay_error = rp.error
    res.cuts = rp.cuts
    res.ever_leak = rp.ever_leak
    res.replay_final = rp.final_replayed
    res.ever_shown = rp.ever_shown
    if res.verdict == "leak":
        res.shown_detect_s = rp.shown_leak_t
    if res.verdict == "leak":
        res.detect_s, res.detect_step = rp.first_stable_leak_t, rp.first_stable_leak_step


def reanalyze_one(script: Script, source: Path, out_dir: Path) -> Result:
    """The record an earlier run of ``script`` left in ``source``, judged again by this
    memprobe's analysis (``memprobe report`` does the same): the table of a run whose agent
    is unchanged, after a change to the analysis only."""
    from memprobe import record as rec
    from memprobe.analysis.finalize import finalize

    res = Result(
        script.name, script.corpus, script.expect, script.pattern, script.step_ms, script.holders
    )
    stem = f"{script.corpus}-{script.path.stem}"
    old = source / f"{stem}.json"
    if not old.exists():
        res.failure = f"no record {old}"
        return res
    record_path = out_dir / f"{stem}.json"
    rec.save(finalize(rec.load(str(old))), str(record_path))
    res.record_path = str(record_path)
    res.rc = 0
    _read_record(res, record_path, script)
    res.wall_s = float(res.duration_s or 0.0)
    return res


# ---------------------------------------------------------------------------- plain runs


def plain_one(script: Script, out_dir: Path, timeout: float, busy: int) -> Result:
    """Run the script without memprobe; sample its RSS and its children's USS every 0.2 s."""
    res = Result(
        script.name, script.corpus, script.expect, script.pattern, script.step_ms, script.holders
    )
    stem = f"plain-{script.corpus}-{script.path.stem}"
    samples: List[Tuple[float, int, int]] = []
    with Burners(busy), open(out_dir / f"{stem}.stdout", "wb") as out:
        with open(out_dir / f"{stem}.stderr", "wb") as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, str(script.path)],
                cwd=ROOT,
                env=_env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            ps = psutil.Process(proc.pid)
            while proc.poll() is None:
                if time.perf_counter() - t0 > timeout:
                    _kill_group(proc)
                    res.timed_out = True
                    break
                try:
                    rss = ps.memory_info().rss
                    kids_uss = 0
                    for k in ps.children(recursive=True):
                        try:
                            kids_uss += k.memory_full_info().uss
                        except psutil.Error:
                            pass
                    if rss:
                        samples.append((time.perf_counter() - t0, rss, kids_uss))
                except psutil.Error:
                    pass
                time.sleep(0.2)
            res.rc = proc.wait()
            res.wall_s = time.perf_counter() - t0
    res.rss_plain = _rss_summary(samples)
    if res.rc != 0:
        res.failure = f"script exit code {res.rc}"
        res.stderr_tail = _tail(out_dir / f"{stem}.stderr")
    return res


def _rss_summary(samples: List[Tuple[float, int, int]]) -> Dict[str, Any]:
    """Start / peak / end RSS, and the growth from 30 % to 95 % of the run (past warm-up)."""
    if not samples:
        return {}

    def at(frac: float) -> Tuple[float, int, int]:
        return samples[min(len(samples) - 1, int(frac * len(samples)))]

    a, b = at(0.3), at(0.95)
    kids = [s for s in samples if s[2]]
    kid_growth = None
    if len(kids) > 4:
        ka, kb = kids[int(0.2 * len(kids))], kids[int(0.9 * len(kids))]
        kid_growth = (kb[2] - ka[2]) / MiB
    return {
        "samples": len(samples),
        "rss_30pct_mib": a[1] / MiB,
        "rss_95pct_mib": b[1] / MiB,
        "rss_peak_mib": max(s[1] for s in samples) / MiB,
        "growth_mib": (b[1] - a[1]) / MiB,
        "growth_window_s": b[0] - a[0],
        "children_uss_growth_mib": kid_growth,
        "series": [(round(t, 2), r, k) for t, r, k in samples],
    }


# ---------------------------------------------------------------------------- report


def _fmt(v: Optional[float], spec: str = ".0f", none: str = "-") -> str:
    return none if v is None else format(v, spec)


def _fmt_bytes(v: Optional[float]) -> str:
    if v is None:
        return "-"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(v) >= scale:
            return f"{v / scale:.1f} {unit}"
    return f"{v:.0f} B"


def _yn(v: Optional[bool]) -> str:
    return "-" if v is None else ("yes" if v else "NO")


def _ever(v: Optional[bool]) -> str:
    """A correct script called a leak at any cut: YES is the alarm here."""
    return "-" if v is None else ("YES" if v else "no")


def table_rows(results: List[Result], plain: bool) -> Tuple[List[str], List[List[str]]]:
    if plain:
        head = ["corpus", "script", "expect", "step ms", "wall s", "RSS@30% MiB", "RSS@95% MiB"]
        head += ["growth MiB", "peak MiB", "workers USS growth", "rc"]
        rows = []
        for r in results:
            s = r.rss_plain or {}
            rows.append(
                [
                    r.corpus,
                    r.script,
                    r.expect,
                    _fmt(r.step_ms, "g"),
                    _fmt(r.wall_s, ".1f"),
                    _fmt(s.get("rss_30pct_mib")),
                    _fmt(s.get("rss_95pct_mib")),
                    _fmt(s.get("growth_mib"), "+.0f"),
                    _fmt(s.get("rss_peak_mib")),
                    _fmt(s.get("children_uss_growth_mib"), "+.0f"),
                    _fmt(r.rc, "d", "timeout"),
                ]
            )
        return head, rows
    head = ["corpus", "script", "expect", "verdict", "ok", "leak from step", "leak from s"]
    head += ["ever leak", "ever shown", "shown from s", "holder", "holder ok", "retained"]
    head += ["run s", "wall s", "rc"]
    rows = []
    for r in results:
        verdict = r.verdict or "-"
        if r.failure:
            verdict += " (!)"
        rows.append(
            [
                r.corpus,
                r.script,
                r.expect,
                verdict,
                "yes" if r.correct else "NO",
                _fmt(r.detect_step),
                _fmt(r.detect_s, ".1f"),
                _ever(r.ever_leak) if r.expect == "no_leak" else "",
                _ever(r.ever_shown) if r.expect == "no_leak" else "",
                _fmt(r.shown_detect_s, ".1f"),
                (r.holder or "-") if r.expect == "leak" or r.holder else "",
                _yn(r.holder_ok) if r.expect == "leak" else "",
                _fmt_bytes(r.retained_bytes),
                _fmt(r.duration_s, ".1f"),
                _fmt(r.wall_s, ".1f"),
                _fmt(r.rc, "d", "timeout"),
            ]
        )
    return head, rows


def render_table(head: List[str], rows: List[List[str]], markdown: bool) -> str:
    if markdown:
        esc = [[c.replace("|", "\\|") for c in row] for row in rows]
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in esc]
        return "\n".join(lines)
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)
    ]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(
        [fmt.format(*head), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in rows]
    )


def summarize(results: List[Result]) -> Dict[str, Dict[str, Any]]:
    groups: Dict[str, List[Result]] = {}
    for r in results:
        groups.setdefault(r.corpus, []).append(r)
    if len(groups) > 1:
        groups["overall"] = list(results)
    out: Dict[str, Dict[str, Any]] = {}
    for name, rs in groups.items():
        leaks = [r for r in rs if r.expect == "leak"]
        oks = [r for r in rs if r.expect == "no_leak"]
        named = [r for r in leaks if r.holders_expected]
        detect = [r.detect_s for r in leaks if r.verdict == "leak" and r.detect_s is not None]
        shown = [r.shown_detect_s for r in leaks if r.shown_detect_s is not None]
        out[name] = {
            "scripts": len(rs),
            "leaks": len(leaks),
            "leaks_flagged": sum(r.verdict == "leak" for r in leaks),
            "non_leaks": len(oks),
            "non_leaks_ever_flagged": sum(bool(r.ever_leak) for r in oks),
            "non_leaks_ever_shown": sum(bool(r.ever_shown) for r in oks),
            "non_leaks_final_leak": sum(r.verdict == "leak" for r in oks),
            "non_leaks_settled_no_leak": sum(r.verdict == "no_leak" for r in oks),
            "holders_expected": len(named),
            "holders_recognised": sum(bool(r.holder_ok) for r in named),
            "median_detect_s": statistics.median(detect) if detect else None,
            "median_shown_detect_s": statistics.median(shown) if shown else None,
            "memprobe_failures": [r.script for r in rs if r.failure],
        }
    return out


def render_summary(summary: Dict[str, Dict[str, Any]]) -> str:
    lines = []
    for name, s in summary.items():
        settled = 100.0 * s["non_leaks_settled_no_leak"] / s["non_leaks"] if s["non_leaks"] else 0.0
        med, shown = s["median_detect_s"], s.get("median_shown_detect_s")
        lines.append(
            f"{name}: leaks flagged {s['leaks_flagged']}/{s['leaks']}"
            f" (median {'-' if med is None else f'{med:.1f}'} s to a stable leak verdict,"
            f" {'-' if shown is None else f'{shown:.1f}'} s in the live table);"
            f" non-leaks ever flagged {s['non_leaks_ever_flagged']}/{s['non_leaks']}"
            f" (in the live table: {s.get('non_leaks_ever_shown', '-')})"
            f" (leak at the end: {s['non_leaks_final_leak']});"
            f" non-leaks settled to no_leak {s['non_leaks_settled_no_leak']}/{s['non_leaks']}"
            f" ({settled:.0f} %);"
            f" holders recognised {s['holders_recognised']}/{s['holders_expected']}"
        )
        if s["memprobe_failures"]:
            lines.append(f"  MEMPROBE FAILED ON: {', '.join(s['memprobe_failures'])}")
    return "\n".join(lines)


def render_plain_summary(results: List[Result]) -> str:
    lines = []
    for r in results:
        s = r.rss_plain or {}
        if r.failure:
            lines.append(f"{r.script}: {r.failure}")
        elif s:
            kid = s.get("children_uss_growth_mib")
            lines.append(
                f"{r.script}: {r.expect}, wall {r.wall_s:.1f}s, RSS {s['rss_30pct_mib']:.0f} -> "
                f"{s['rss_95pct_mib']:.0f} MiB ({s['growth_mib']:+.0f} MiB over "
                f"{s['growth_window_s']:.1f}s), peak {s['rss_peak_mib']:.0f} MiB"
                + (f", workers' USS {kid:+.0f} MiB" if kid is not None else "")
            )
    return "\n".join(lines)


def render_failures(results: List[Result]) -> Iterator[str]:
    for r in results:
        if r.failure:
            yield f"=== {r.corpus}/{r.script}: {r.failure}\n{r.stderr_tail.rstrip()}\n"


# ---------------------------------------------------------------------------- main


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", choices=["all", *CORPORA], default="all")
    ap.add_argument(
        "--only",
        metavar="SUBSTRING",
        help="only scripts whose file name contains it (several: a,b,c)",
    )
    ap.add_argument(
        "--busy", action="store_true", help="one CPU-bound process per core beside each run"
    )
    ap.add_argument("--jobs", type=int, default=1, help="runs at a time (default 1)")
    ap.add_argument("--out", metavar="FILE", help="write every result and the summary as JSON")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per run (default 600)")
    ap.add_argument("--records-dir", metavar="DIR", help="keep run records and output here")
    ap.add_argument("--plain", action="store_true", help="run without memprobe, sample RSS")
    ap.add_argument(
        "--reanalyze",
        metavar="DIR",
        help="run nothing: judge the records an earlier --records-dir DIR holds again",
    )
    return ap.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    scripts = discover(args.corpus, args.only)
    if not scripts:
        print("no scripts match", file=sys.stderr)
        return 2
    out_dir = Path(args.records_dir or tempfile.mkdtemp(prefix="bench-corpus-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    busy = (os.cpu_count() or 1) if args.busy else 0
    worker = plain_one if args.plain else run_one
    if args.reanalyze:
        source = Path(args.reanalyze)

        def worker(script: Script, out_dir: Path, timeout: float, busy: int) -> Result:
            return reanalyze_one(script, source, out_dir)

    lock = threading.Lock()
    load_before = os.getloadavg()

    def one(script: Script) -> Result:
        res = worker(script, out_dir, args.timeout, busy)
        with lock:
            flag = f"  FAILED: {res.failure}" if res.failure else ""
            shown = res.verdict or (f"rc {res.rc}" if args.plain else "-")
            print(
                f"[{script.corpus}] {script.name}: {shown} (expected {script.expect}, "
                f"{res.wall_s:.1f}s){flag}",
                file=sys.stderr,
                flush=True,
            )
        return res

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(one, scripts))
    total = time.perf_counter() - t0

    head, rows = table_rows(results, args.plain)
    print(render_table(head, rows, args.markdown))
    print()
    summary = summarize(results) if not args.plain else {}
    print(render_plain_summary(results) if args.plain else render_summary(summary))
    failures = list(render_failures(results))
    if failures:
        print("\nFailures (stderr tails):\n")
        print("\n".join(failures))
    print(f"\nrecords and output in {out_dir}; {total:.0f}s in all", file=sys.stderr)

    if args.out:
        payload = {
            "argv": sys.argv,
            "mode": "plain" if args.plain else "memprobe",
            "busy_processes": busy,
            "jobs": args.jobs,
            "machine": {
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "loadavg_before": load_before,
                "loadavg_after": os.getloadavg(),
            },
            "total_s": total,
            "summary": summary,
            "results": [dataclasses.asdict(r) for r in results],
        }
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
