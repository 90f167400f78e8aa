"""End to end: the target dies, is interrupted or misbehaves; the run record survives.

Every test runs the real CLI (``python -m memprobe run``) on a small script from
tests/scripts/ and asserts on the run record it wrote.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from faultutil import (
    TARGET,
    memprobe_lines,
    pid_alive,
    rss_points,
    run_plain,
    start_cli,
    target_args,
    wait_for,
    wait_ready,
)
from recordgen import make_record

from conftest import cli_env, load, main_process, run_cli, validate
from memprobe.collect.rebuild import rebuild
from memprobe.launch.limits import oom_kill_count

pytestmark = pytest.mark.slow  # end to end: the real CLI as a subprocess

OOM_READABLE = oom_kill_count() is not None


def _finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def main_census(record: Dict[str, Any]) -> List[Any]:
    census: List[Any] = main_process(record).get("census") or []
    return census


def _assert_signal_record(record: Dict[str, Any], sig: int) -> None:
    assert record["exit"]["signal"] == sig
    assert record["exit"]["code"] is None
    kinds = [e["kind"] for e in record["events"]]
    assert "signal" in kinds, kinds


def test_target_sigkilled_mid_run(tmp_path: Path, schema: Dict[str, Any]) -> None:
    # GIVEN a target that steps and grows until killed
    out, ready = tmp_path / "r.json", tmp_path / "ready"
    proc = start_cli(target_args(out, ready, 30, "wait"), tmp_path)
    pid = wait_ready(ready, proc)
    # WHEN it is SIGKILLed (what the OOM killer does)
    os.kill(pid, signal.SIGKILL)
    code, _, err = _finish(proc)
    # THEN memprobe exits 128+9 and writes a complete, valid record up to the kill
    assert code == 128 + 9, err
    record = load(out)
    validate(record, schema)
    _assert_signal_record(record, 9)
    # not an OOM kill: the cgroup counter did not rise (None where it cannot be read)
    assert record["exit"]["oom_killed"] is (False if OOM_READABLE else None)
    rss = rss_points(record)
    assert len(rss) >= 5 and rss[-1] > rss[0]
    main = [p for p in record["processes"] if p["role"] == "main"][0]
    assert main["ended"] == "vanished"  # no exit line: it never got to say goodbye
    assert main["steps"] >= 10  # the last sample before the kill: steps are sampled
    assert any("killed by signal 9" in line for line in memprobe_lines(err)), err
    assert not out.with_suffix(".run").exists()  # run folder removed once the record is safe


def test_segfault(tmp_path: Path, schema: Dict[str, Any]) -> None:
    out, ready = tmp_path / "r.json", tmp_path / "ready"
    proc = run_cli(target_args(out, ready, 25, "segv"), cwd=tmp_path, timeout=60)
    assert proc.returncode == 128 + signal.SIGSEGV, proc.stderr
    record = load(out)
    validate(record, schema)
    _assert_signal_record(record, signal.SIGSEGV)
    assert len(rss_points(record)) >= 5


def test_os_exit_code(tmp_path: Path, schema: Dict[str, Any]) -> None:
    out, ready = tmp_path / "r.json", tmp_path / "ready"
    proc = run_cli(target_args(out, ready, 25, "os_exit:7"), cwd=tmp_path, timeout=60)
    assert proc.returncode == 7, proc.stderr
    record = load(out)
    validate(record, schema)
    assert record["exit"] == {
        "code": 7,
        "signal": None,
        "oom_killed": False if OOM_READABLE else None,
    }
    main = [p for p in record["processes"] if p["role"] == "main"][0]
    assert main["ended"] == "vanished"  # os._exit skips atexit: no exit line, still a record
    assert main["steps"] >= 10


@pytest.mark.parametrize("then", ["raise", "sysexit_msg"])
def test_uncaught_exception_and_exit_message_as_a_plain_run(
    tmp_path: Path, schema: Dict[str, Any], then: str
) -> None:
    # GIVEN a target that ends with an uncaught exception / sys.exit("msg")
    out, ready = tmp_path / "r.json", tmp_path / "ready"
    proc = run_cli(target_args(out, ready, 25, then), cwd=tmp_path, timeout=60)
    plain = run_plain([str(TARGET), str(tmp_path / "ready2"), "25", then], cwd=tmp_path)
    # THEN memprobe exits 1 like the plain run, and the target's stderr is exactly the plain one
    assert plain.returncode == 1
    assert proc.returncode == 1, proc.stderr
    target_err = "\n".join(
        line for line in proc.stderr.splitlines() if not line.startswith("memprobe")
    )
    assert target_err.strip() == plain.stderr.strip()
    record = load(out)
    validate(record, schema)
    assert record["exit"]["code"] == 1
    main = [p for p in record["processes"] if p["role"] == "main"][0]
    assert main["ended"] == "exit"


def test_ctrl_c_reaches_the_target_and_memprobe_keeps_the_run(
    tmp_path: Path, schema: Dict[str, Any]
) -> None:
    # GIVEN memprobe and its target in one process group, as in a terminal
    out, ready = tmp_path / "r.json", tmp_path / "ready"
    proc = start_cli(target_args(out, ready, 30, "wait"), tmp_path)
    wait_ready(ready, proc)
    # WHEN Ctrl-C is pressed (SIGINT to the whole group)
    os.killpg(proc.pid, signal.SIGINT)
    code, _, err = _finish(proc)
    # THEN the target dies of KeyboardInterrupt as it would alone (Python re-raises SIGINT),
    # memprobe survives it, writes the record and exits 128+2
    assert "KeyboardInterrupt" in err
    assert code == 128 + signal.SIGINT, err
    record = load(out)
    validate(record, schema)
    _assert_signal_record(record, signal.SIGINT)
    assert len(rss_points(record)) >= 5


def test_ctrl_c_during_a_census_lands_in_the_programs_own_code(tmp_path: Path) -> None:
    # GIVEN a loop whose SIGINT arrives while the agent's census runs in its main thread
    # (a watcher thread in the script sends it once it sees census.py on the main stack)
    script = Path(__file__).parent / "scripts" / "ctrl_c_in_census.py"
    res = run_cli(["run", "--no-live", "-o", str(tmp_path / "r.json"), str(script)], tmp_path)
    # THEN the program's own handler gets the KeyboardInterrupt, raised in its own code
    # (the census held it back and handed it on): no frame of memprobe in its traceback,
    # as in a plain run, and the run goes on to its record
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SENT True" in res.stdout, res.stdout
    line = next(x for x in res.stdout.splitlines() if x.startswith("INTERRUPTED at"))
    assert line.endswith("ctrl_c_in_census.py"), line
    record = load(tmp_path / "r.json")
    assert any(c.get("step") for c in main_census(record)), "the census it held SIGINT for"


def test_ctrl_c_handled_by_the_target_gives_its_exit_code(
    tmp_path: Path, schema: Dict[str, Any]
) -> None:
    out, ready = tmp_path / "r.json", tmp_path / "ready"
    proc = start_cli(target_args(out, ready, 30, "sigint_catch:3"), tmp_path)
    wait_ready(ready, proc)
    os.killpg(proc.pid, signal.SIGINT)
    code, stdout, err = _finish(proc)
    # THEN exactly one KeyboardInterrupt reached the target (SIGINT is not forwarded twice)
    assert stdout.count("caught KeyboardInterrupt") == 1
    assert code == 3, err
    record = load(out)
    validate(record, schema)
    assert record["exit"]["code"] == 3 and record["exit"]["signal"] is None
    assert [p for p in record["processes"] if p["role"] == "main"][0]["ended"] == "exit"


def test_sigterm_to_memprobe_is_forwarded(tmp_path: Path, schema: Dict[str, Any]) -> None:
    out, ready = tmp_path / "r.json", tmp_path / "ready"
    proc = start_cli(target_args(out, ready, 30, "wait"), tmp_path)
    pid = wait_ready(ready, proc)
    # WHEN only memprobe gets SIGTERM (a job scheduler, `kill PID`)
    os.kill(proc.pid, signal.SIGTERM)
    code, _, err = _finish(proc)
    # THEN the target got it too, and the record says so
    assert code == 128 + signal.SIGTERM, err
    assert not pid_alive(pid)
    record = load(out)
    validate(record, schema)
    _assert_signal_record(record, signal.SIGTERM)


def test_memprobe_sigkilled_target_runs_on_and_the_folder_rebuilds(
    tmp_path: Path, schema: Dict[str, Any]
) -> None:
    # GIVEN a run whose memprobe parent is SIGKILLed mid-run
    out, ready = tmp_path / "r.json", tmp_path / "ready"
    target_out = tmp_path / "target.out"
    with open(target_out, "w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memprobe", *target_args(out, ready, 80, "exit:0")],
            cwd=tmp_path,
            env=cli_env(),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        pid = wait_ready(ready, proc)
        proc.kill()
        proc.wait(timeout=10)
    # THEN the target is not harmed: it runs to its own end (chosen behaviour: memprobe
    # never takes the target down with it; its files survive the parent)
    wait_for(lambda: not pid_alive(pid), timeout=60, what="the target to finish")
    assert "fault_target done" in target_out.read_text()
    assert not out.exists()
    run_dir = tmp_path / "r.run"
    assert run_dir.is_dir()
    # AND `memprobe report RUN_DIR` rebuilds a valid record from the run folder
    rep = run_cli(["report", str(run_dir), "--format", "json"], cwd=tmp_path, timeout=60)
    assert rep.returncode == 0, rep.stderr
    assert "Traceback" not in rep.stderr
    from memprobe.collect.rebuild import rebuild

    record = rebuild(str(run_dir)).to_json()
    validate(record, schema)
    main = [p for p in record["processes"] if p["role"] == "main"][0]
    assert main["pid"] == pid and main["ended"] == "exit" and main["steps"] == 80
    assert len(main["series"]["rss_bytes"]["value"]) >= 20
    assert record["exit"] == {"code": None, "signal": None, "oom_killed": None}  # unknown
    assert "rebuilt" in [e["kind"] for e in record["events"]]


@pytest.mark.parametrize("collector", ["rss", "py_blocks", "cuda", "expensive"])
def test_failing_collector_is_switched_off_not_the_target(
    tmp_path: Path, schema: Dict[str, Any], collector: str
) -> None:
    # GIVEN a collector made to raise through the test-only switch
    out, ready = tmp_path / "r.json", tmp_path / "ready"
    proc = run_cli(
        target_args(out, ready, 40, "exit:0", "--x-fail-collector", collector),
        cwd=tmp_path,
        timeout=60,
    )
    # THEN the target is unaffected, the collector is off, and an event says so — once
    assert proc.returncode == 0, proc.stderr
    assert "fault_target done" in proc.stdout
    record = load(out)
    validate(record, schema)
    offs = [e for e in record["events"] if e["kind"] == "collector_off"]
    assert len(offs) == 1, record["events"]
    assert repr(collector) in offs[0]["message"]
    main = [p for p in record["processes"] if p["role"] == "main"][0]
    assert main["steps"] == 40
    if collector == "py_blocks":
        assert "py_alloc_blocks" not in main["series"]
        assert len(main["series"]["rss_bytes"]["value"]) >= 5
    if collector == "rss":
        assert "py_alloc_blocks" in main["series"]
    if collector == "expensive":  # no census at all, the cheap series as usual
        assert main["census"] == [] and len(main["series"]["rss_bytes"]["value"]) >= 5


_PRINTS_LATER = """
import os, sys, time
import memprobe
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(1.5)
result = []
for stream in (sys.stdout, sys.stderr):
    try:
        print("after the parent died", file=stream, flush=True)
        result.append("ok")
    except OSError as e:
        result.append(f"OSError {e.errno}")
open(sys.argv[2], "w").write(" ".join(result))
"""


def test_memprobe_sigkilled_in_live_mode_target_keeps_its_terminal(tmp_path: Path) -> None:
    # GIVEN --live: the target's stdout/stderr are ptys whose master side memprobe reads
    script, ready, result = tmp_path / "t.py", tmp_path / "ready", tmp_path / "result"
    script.write_text(_PRINTS_LATER)
    proc = start_cli(
        ["run", "--live", "-o", str(tmp_path / "r.json"), str(script), str(ready), str(result)],
        tmp_path,
    )
    pid = wait_ready(ready, proc)
    # WHEN memprobe is SIGKILLed
    proc.kill()
    out, err = proc.communicate(timeout=30)  # EOF once the target, which relays, is gone too
    wait_for(lambda: not pid_alive(pid), timeout=30, what="the target to finish")
    # THEN the target's prints still work (no EIO)
    assert result.read_text() == "ok ok"
    # the relay thread may not copy the last lines before the target exits right after
    # printing them (a known limit, in the issue notes); what must hold is that printing
    # never failed (no EIO: result above) and that the agent took the relay over (below)
    del out, err
    events = [e for e in rebuild(str(tmp_path / "r.run")).events if e.kind == "relay"]
    assert len(events) == 1


@pytest.mark.parametrize("oom,words", [(None, "OOM killer: unknown"), (True, "OOM"), (False, "")])
def test_sigkill_summary_says_what_is_known_of_the_oom_killer(
    oom: Optional[bool], words: str
) -> None:
    # GIVEN a record of a SIGKILLed target, with the cgroup counter rising / not / unreadable
    import dataclasses
    import io

    from recordgen import make_record
    from rich.console import Console

    from memprobe.commands.run import print_summary
    from memprobe.record import ExitInfo
    from memprobe.render._common import exit_text

    r = dataclasses.replace(make_record(steps=20), exit=ExitInfo(signal=9, oom_killed=oom))
    out = io.StringIO()
    print_summary(r, Console(file=out, width=200))
    # THEN the summary and the report say killed by signal 9, and OOM only as far as known
    for text in (out.getvalue(), exit_text(r)):
        assert "signal 9" in text
        assert (words in text) if words else ("OOM" not in text)


def test_a_ctrl_c_the_moment_the_analysis_may_be_interrupted_keeps_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memprobe.commands import run as run_cmd
    from memprobe.launch.runner import RunOutcome

    # GIVEN a finished run, and a Ctrl-C delivered the instant memprobe's handler for it goes
    # in (before the analysis has begun: the window a storm of Ctrl-C once hit)
    record = make_record(steps=40, seed=2)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    real = signal.signal

    def deliver_at_once(signum: int, handler: Any) -> Any:
        old = real(signum, handler)
        if signum == signal.SIGINT and callable(handler) and handler is not old:
            if getattr(handler, "__name__", "") == "interrupt_once":
                handler(signum, None)  # as the kernel would, between two bytecodes
        return old

    monkeypatch.setattr(run_cmd.signal, "signal", deliver_at_once)  # type: ignore[attr-defined]
    previous = real(signal.SIGINT, run_cmd._ignore_signal)
    try:
        out = tmp_path / "r.json"
        # WHEN memprobe finishes the run
        code, verdict = run_cmd.finish(RunOutcome(record, 0, str(run_dir)), str(out), None, False)
    finally:
        real(signal.SIGINT, previous)
    # THEN the analysis is skipped and the record is written all the same
    assert code == 0 and verdict == record.verdict
    assert load(out)["processes"]


def test_impatient_ctrl_c_still_leaves_a_record(tmp_path: Path, schema: Dict[str, Any]) -> None:
    # GIVEN a run, and a user who keeps pressing Ctrl-C until memprobe is gone
    out, ready = tmp_path / "r.json", tmp_path / "ready"
    proc = start_cli(target_args(out, ready, 30, "wait"), tmp_path)
    wait_ready(ready, proc)
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    code, _, err = _finish(proc)
    # THEN memprobe skips what it must (the analysis) but never loses the record
    assert "memprobe/" not in err, err  # no traceback of memprobe's own
    record = load(out)
    validate(record, schema)
    e = record["exit"]
    # a Ctrl-C during interpreter teardown (handlers reset) ends memprobe by SIGINT itself,
    # after the record and the summary: a shell sees 130 either way
    seen = 128 - code if code < 0 else code
    assert seen == (128 + e["signal"] if e["signal"] else e["code"]), (code, e)
    assert "memprobe: run record" in err
    assert len(rss_points(record)) >= 5
