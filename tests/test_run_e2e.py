"""End to end: the real `memprobe run` on real scripts; assert on the record it writes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import SAMPLES, SCRIPTS, cli_env, load, main_process, run_cli, validate

pytestmark = pytest.mark.slow  # end to end: the real CLI as a subprocess

PROBE = SCRIPTS / "probe_target.py"


def _probe(
    tmp_path: Path,
    exit_mode: str = "0",
    extra_env: dict[str, str] | None = None,
    args: list[str] | None = None,
) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    out = tmp_path / "run.json"
    info = tmp_path / "info.json"
    env = cli_env({"PROBE_OUT": str(info), "PROBE_EXIT": exit_mode, **(extra_env or {})})
    proc = run_cli(["run", "-o", str(out), str(PROBE), *(args or [])], cwd=tmp_path, env=env)
    return proc, out, info


@pytest.mark.parametrize("mode,code", [("0", 0), ("1", 1), ("3", 3), ("raise", 1), ("msg", 1)])
def test_exit_codes_and_output_pass_through(
    tmp_path: Path, schema: dict[str, Any], mode: str, code: int
) -> None:
    # GIVEN a target that exits in a given way WHEN run under memprobe
    proc, out, _ = _probe(tmp_path, mode)
    # THEN memprobe exits with the target's code, its stdout is untouched, the record is valid
    assert proc.returncode == code, proc.stderr
    assert proc.stdout == "stdout-line\n"
    assert "stderr-line" in proc.stderr
    if mode == "raise":
        assert "RuntimeError: boom from target" in proc.stderr
    if mode == "msg":
        assert "bye message" in proc.stderr
    record = load(out)
    validate(record, schema)
    assert record["exit"]["code"] == code
    assert record["exit"]["signal"] is None


def test_target_sees_a_plain_run(tmp_path: Path) -> None:
    # GIVEN arguments that look like memprobe options after the script name
    args = ["--lr", "3e-4", "-o", "not-memprobes.json", "--fail-on-leak", "--", "x"]
    proc, out, info = _probe(tmp_path, args=args)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(info.read_text())
    # THEN __main__, argv, cwd are those of a plain run; no torch, no memprobe package
    assert seen["name"] == "__main__"
    assert seen["argv"] == [str(PROBE), *args]
    assert seen["cwd"] == str(tmp_path)
    assert seen["torch_loaded"] is False
    assert seen["memprobe_loaded"] is False
    assert seen["agent_loaded"] is True
    assert seen["path_has_bootstrap"] is False
    assert not (tmp_path / "not-memprobes.json").exists()
    assert out.exists()


def test_targets_own_sitecustomize_still_runs(tmp_path: Path) -> None:
    own = str(SCRIPTS / "own_sitecustomize")
    proc, out, info = _probe(tmp_path, extra_env={"PYTHONPATH": own})
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(info.read_text())
    assert seen["sitecustomize"] == "the target's own sitecustomize ran"
    assert seen["agent_loaded"] is True
    assert load(out)["processes"], "no process recorded"


def test_a_program_with_audit_hooks_pays_for_few_events(tmp_path: Path) -> None:
    # GIVEN a program that installed a Python audit hook (each event runs it; a lineage
    # recorder that adds one per shard runs hundreds), whose list the censuses look at
    counts = tmp_path / "events.json"
    script = SCRIPTS / "audit_hooks.py"
    proc = run_cli(
        ["run", "-o", str(tmp_path / "run.json"), str(script), "6", str(counts)], cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(counts.read_text())
    record = load(tmp_path / "run.json")
    censuses = len(main_process(record)["census"])
    assert censuses >= 3, censuses
    # THEN the agent raises no event per object it looks at (``id()`` raises one: tens of
    # thousands a census, 3.7x the run time of a program with 2,000 hooks), a few hundred
    # in all: frames' code read, the threads' stacks, the heap's objects once a census
    assert "builtins.id" not in seen, seen
    assert sum(seen.values()) < 400 * censuses, (censuses, seen)


def test_module_form(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    env = cli_env({"PYTHONPATH": str(SCRIPTS)})
    proc = run_cli(
        ["run", "-o", str(out), "-m", "pkg_demo.worker", "a", "--b"], cwd=tmp_path, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "module __main__ ['a', '--b']\n"
    main = main_process(load(out))
    assert main["series"]["rss_bytes"]["value"]


def test_double_dash_form_with_interpreter_flags(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    info = tmp_path / "info.json"
    env = cli_env({"PROBE_OUT": str(info)})
    proc = run_cli(
        ["run", "-o", str(out), "--", sys.executable, "-X", "dev", str(PROBE), "z"],
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(info.read_text())["argv"] == [str(PROBE), "z"]
    assert load(out)["command"][:3] == [sys.executable, "-X", "dev"]


def test_shell_script_that_starts_python(tmp_path: Path) -> None:
    # GIVEN a shell script that runs python: the bootstrap reaches it through the environment
    script = tmp_path / "go.sh"
    script.write_text(f'#!/bin/sh\necho from-shell\nexec "{sys.executable}" "{PROBE}" from-sh\n')
    script.chmod(0o755)
    out = tmp_path / "run.json"
    info = tmp_path / "info.json"
    proc = run_cli(
        ["run", "-o", str(out), "--", str(script)],
        cwd=tmp_path,
        env=cli_env({"PROBE_OUT": str(info)}),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "from-shell\nstdout-line\n"
    assert json.loads(info.read_text())["agent_loaded"] is True
    assert any(p["has_agent"] for p in load(out)["processes"])


def test_pure_python_leak_series_grow(tmp_path: Path, schema: dict[str, Any]) -> None:
    out = tmp_path / "run.json"
    proc = run_cli(
        ["run", "-o", str(out), str(SAMPLES / "leak_pure_python.py"), "--steps", "300"],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("handled 300 events")
    record = load(out)
    validate(record, schema)
    main = main_process(record)
    # memprobe.step() marks steps even without torch
    assert main["steps"] == 300
    assert record["x_axis"] == "step"
    blocks = main["series"]["py_alloc_blocks"]["value"]
    assert blocks[-1] - blocks[0] > 300 * 3, "each logged event adds a dict, a list and its items"


def test_torch_loss_list_records_steps_and_growth(tmp_path: Path, schema: dict[str, Any]) -> None:
    out = tmp_path / "run.json"
    proc = run_cli(
        ["run", "-o", str(out), str(SAMPLES / "leak_loss_list.py"), "--steps", "300"], cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    record = load(out)
    validate(record, schema)
    main = main_process(record)
    assert main["steps"] == 300, "every optimizer.step() counted through the global hook"
    assert any(e["kind"] == "step_hook" for e in record["events"])
    rss = main["series"]["rss_bytes"]
    stepped = [s for s in rss["step"] if s is not None]
    assert len(stepped) >= 10 and stepped == sorted(stepped)
    assert rss["value"][-1] > rss["value"][len(rss["value"]) // 4]
    # AND the agent says what it cost the program, in CPU seconds it measured itself: some
    # (a census at least), and no more than the run itself lasted
    (cost,) = [e for e in record["events"] if e["kind"] == "agent_cost"]
    found = re.search(
        r"used ([\d.]+) s .* and ([\d.]+) s .*: ([\d.]+) s over ([\d.]+) s", cost["message"]
    )
    assert found, cost
    at_steps, own_thread, total, elapsed = map(float, found.groups())
    assert at_steps > 0 and abs(at_steps + own_thread - total) < 0.02 and total < elapsed
    # AND the whole process' CPU, which holds the agent's own
    process = re.search(r"the process used ([\d.]+) s of CPU in all", cost["message"])
    assert process, cost
    assert float(process.group(1)) >= total


def test_default_output_name_and_message(tmp_path: Path) -> None:
    proc, _, _ = _probe(tmp_path)  # with -o; now without
    env = cli_env({"PROBE_EXIT": "0"})
    proc = run_cli(["run", str(PROBE)], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    made = sorted(tmp_path.glob("memprobe-probe_target-*.json"))
    assert len(made) == 1
    assert made[0].name in proc.stderr
    assert not list(tmp_path.glob("*.run")), "the run folder is removed once the record is written"
    assert oct(os.stat(made[0]).st_mode & 0o777) == "0o600"


@pytest.mark.parametrize(
    "args,needle",
    [
        (["run", "no_such_script.py"], "no such script"),
        (["run", "--", "no-such-command-xyz"], "command not found"),
        (["run", "-o", "/no/such/dir/run.json", str(PROBE)], "does not exist"),
        (["run", "--", sys.executable, "-I", str(PROBE)], "-I"),
    ],
)
def test_bad_invocations_fail_with_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    proc = run_cli(args, cwd=tmp_path)
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0


def test_stdout_redirect_keeps_target_output_exact(tmp_path: Path) -> None:
    # `memprobe run x.py > log.txt`: memprobe writes nothing to stdout
    log = tmp_path / "log.txt"
    with open(log, "w") as f:
        import subprocess

        rc = subprocess.run(
            [sys.executable, "-m", "memprobe", "run", "-o", str(tmp_path / "r.json"), str(PROBE)],
            stdout=f,
            stderr=subprocess.PIPE,
            env=cli_env(),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
        ).returncode
    assert rc == 0
    assert log.read_text() == "stdout-line\n"


def test_report_several_node_records_together(tmp_path: Path) -> None:
    # GIVEN two nodes' records (here the same golden record twice, so their pids collide)
    golden = Path(__file__).parent / "data" / "run-v1-synthetic-leaky.json"
    # WHEN they are reported together
    proc = run_cli(["report", "--format", "markdown", str(golden), str(golden)], cwd=tmp_path)
    # THEN one report shows both nodes' processes, labelled by node
    assert proc.returncode == 0, proc.stderr
    assert "node 0" in proc.stdout and "node 1" in proc.stdout


@pytest.mark.slow
def test_no_sample_is_taken_while_the_program_takes_itself_apart(tmp_path: Path) -> None:
    # GIVEN a program without steps whose own atexit handler clears its list, then takes 1.5 s
    out = tmp_path / "run.json"
    proc = run_cli(["run", "--no-live", "-o", str(out), str(SCRIPTS / "exit_takes_apart.py")])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("kept ")
    record = load(out)
    rss_t = main_process(record)["series"]["rss_bytes"]["t"]
    # (the agent reports its cost as it closes, after the program's handler)
    closed = [e["t"] for e in record["events"] if e.get("kind") == "agent_cost"]
    assert closed, record["events"]
    # THEN the samples stop where its own code did: none in the handler's 1.5 s (samples
    # come every 0.1 s while the program runs), so no series ends on the emptied list
    assert closed[-1] - max(rss_t) >= 1.0, (closed, rss_t[-5:])
