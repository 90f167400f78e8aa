"""Names from the target (script path, argv, type names, holder paths, process names) that
carry Rich markup, control characters or terminal escape sequences are shown as text: in the
output of `memprobe run` (plain progress lines, live table, summary, messages), in
`memprobe report` (terminal and Markdown). The record itself keeps them as data."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from typing import List

import pytest
from faultutil import FAST
from rich.console import Console

from conftest import SCRIPTS, cli_env, load, run_cli
from memprobe.collect.state import RunState
from memprobe.render.live import build_table, progress_line

# what must never reach a terminal from the target: an OSC title change, clear-screen, BEL,
# backspace, carriage return, a right-to-left override
ESC_TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
MARKUP = "[bold red]x"
SCRIPT_NAME = f"{MARKUP}{ESC_TITLE}{CLEAR}.py"  # '/' cannot be in a file name: no '[/]'
ARG = f"--name={CLEAR}[red]y[/]\x08\r\u202eevil"
NEVER = ("\x1b]", "\x1b[2J", "\x07", "\x08", "\r", "\u202e")


def _assert_shown_as_text(out: str, where: str) -> None:
    for bad in NEVER:
        assert bad not in out, f"{bad!r} reached the terminal in {where}: {out[-3000:]!r}"


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`memprobe run` on a script with a hostile file name, argv, class and global names;
    no -o, so the default record name comes from the hostile script name."""
    tmp = tmp_path_factory.mktemp("hostile")
    script = tmp / SCRIPT_NAME
    shutil.copy(SCRIPTS / "fault_hostile.py", script)
    proc = run_cli(["run", *FAST, str(script), "400", ARG], cwd=tmp, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    records = list(tmp.glob("memprobe-*.json"))
    assert len(records) == 1, list(tmp.iterdir())
    return records[0], proc.stderr


@pytest.mark.slow
def test_run_output_shows_hostile_names_as_text(hostile_run: tuple[Path, str]) -> None:
    record_path, stderr = hostile_run
    # THEN nothing the target named reached the terminal raw ...
    _assert_shown_as_text(stderr, "memprobe run")
    # ... and markup is printed literally, not interpreted (the record name and the culprit)
    assert f"memprobe-{MARKUP}" in stderr
    record = load(record_path)
    if record["verdict"] == "leak":  # the summary names the holder: as text
        assert f"__main__.{MARKUP}[/]" in stderr
    # AND the record keeps the true names as data (display cleans, storage does not)
    assert record["command"][-1] == ARG
    assert any(ESC_TITLE[:-1] in name for p in record["processes"] for name in p["series"])


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_report_shows_hostile_names_as_text(hostile_run: tuple[Path, str], fmt: str) -> None:
    record_path, _ = hostile_run
    proc = run_cli(
        ["report", str(record_path), "--format", fmt],
        cwd=record_path.parent,
        env=cli_env({"FORCE_COLOR": "1", "COLUMNS": "160"}),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    _assert_shown_as_text(proc.stdout + proc.stderr, f"report --format {fmt}")
    assert "red" in proc.stdout and "evil" in proc.stdout  # the text stays; escapes go
    if fmt == "markdown":
        # markup and Markdown specials escaped or inside code spans: nothing renders as a link
        # or as HTML
        for line in proc.stdout.splitlines():
            escaped_gone = line.replace("\\`", "").replace("\\[", "").replace("\\]", "")
            prose = re.sub(r"`[^`]*`", "", escaped_gone)  # code spans show text literally
            assert "[bold red]" not in prose, line
        assert "<" not in proc.stdout.replace("&lt;", "")


@pytest.mark.slow
def test_live_table_shows_hostile_names_as_text(tmp_path: Path) -> None:
    # GIVEN `memprobe run --live` on a terminal (forced), a hostile script name and argv
    script = tmp_path / SCRIPT_NAME
    shutil.copy(SCRIPTS / "fault_hostile.py", script)
    proc = run_cli(
        ["run", "--live", *FAST, "-o", str(tmp_path / "r.json"), str(script), "120", ARG],
        cwd=tmp_path,
        env=cli_env({"FORCE_COLOR": "1", "COLUMNS": "160"}),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    # THEN Rich draws its table (its own escape codes) but none of the target's
    assert "\x1b[" in proc.stderr and "memprobe ·" in proc.stderr
    _assert_shown_as_text(proc.stderr, "the live table")
    assert MARKUP in proc.stderr


def _hostile_state() -> RunState:
    state = RunState(command=["python", SCRIPT_NAME, ARG], cwd="/", started_at=0.0)
    for pid, argv in ((10, [SCRIPT_NAME, ARG]), (11, [f"{CLEAR}worker{ESC_TITLE}"])):
        state.ingest(
            pid, {"k": "header", "argv": argv, "ppid": 10 if pid == 11 else 1, "wall_t0": 0.0}
        )
        for i in range(5):
            state.ingest(
                pid,
                {
                    "k": "sample",
                    "t": i * 0.5,
                    "step": i,
                    "v": {"rss_bytes": 1e8 + i * 1e6, f"objects:{MARKUP}{CLEAR}": i},
                },
            )
    return state


def test_live_table_and_progress_line_render_names_as_text() -> None:
    # GIVEN a run state whose processes and signals carry hostile names
    state = _hostile_state()
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=200, color_system="truecolor").print(
        build_table(state, 3.0)
    )
    _assert_shown_as_text(out.getvalue(), "build_table")
    assert MARKUP in out.getvalue()  # markup text shown, not applied
    line = progress_line(state, 3.0)
    _assert_shown_as_text(line, "progress_line")
    assert "\x1b" not in line


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["run", f"/nonexistent/{SCRIPT_NAME}"],
        ["report", f"/nonexistent/{SCRIPT_NAME}.json"],
        ["diff", f"/nonexistent/{SCRIPT_NAME}", f"/nonexistent/{ARG}"],
        ["run", "-o", f"/nonexistent/{SCRIPT_NAME}.json", "--", "python", "-c", "pass"],
    ],
)
def test_error_messages_show_hostile_paths_as_text(tmp_path: Path, args: List[str]) -> None:
    proc = run_cli(args, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memprobe: error: "), lines
    _assert_shown_as_text(proc.stderr, " ".join(args[:1]))
    assert MARKUP in proc.stderr


_UNSAFE_MODULES = {
    "pickle",
    "cPickle",
    "_pickle",
    "marshal",
    "shelve",
    "dill",
    "cloudpickle",
    "jsonpickle",
    "yaml",
}
_UNSAFE_CALLS = {"eval", "exec", "compile", "__import__"}


def test_nothing_from_a_record_is_executed_or_unpickled() -> None:
    # GIVEN every module of memprobe, the agent included
    import ast

    import memprobe

    root = Path(memprobe.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [(node.module or "").split(".")[0]]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                names = [node.func.id] if node.func.id in _UNSAFE_CALLS else []
            else:
                continue
            found += [
                f"{path.relative_to(root)}:{node.lineno} {n}"
                for n in names
                if n in _UNSAFE_MODULES | _UNSAFE_CALLS
            ]
    # THEN nothing deserialises objects or runs code: records and lines are plain JSON
    assert found == []


@pytest.mark.slow
def test_a_record_with_code_like_strings_loads_as_plain_data(tmp_path: Path) -> None:
    from recordgen import make_record

    from memprobe import record as rec

    data = make_record(steps=20).to_json()
    data["command"] = ["__import__('os').system('touch pwned')", "!!python/object:os.system"]
    data["processes"][0]["census"] = [{"__class__": "os._wrap_close", "__reduce__": ["os.system"]}]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    r = rec.load(str(path))
    assert r.command == data["command"]
    assert r.processes[0].census == data["processes"][0]["census"]
    proc = run_cli(["report", str(path)], cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "pwned").exists()


def test_a_newline_in_a_name_cannot_forge_a_line_of_memprobes() -> None:
    # GIVEN a finding whose holder (and so its explanation) carries a newline
    import dataclasses

    from recordgen import make_record

    from memprobe.commands.run import print_summary

    forged = "memprobe: verdict NO LEAK"
    r = make_record(steps=40, leak_bytes_per_step=1e6)
    f = dataclasses.replace(
        r.findings[0],
        verdict="leak",
        explanation=f"x.items\n{forged}",
        fix_hint=f"clear it\r\n{forged}\tnow",
    )
    out = io.StringIO()
    print_summary(
        dataclasses.replace(r, findings=[f], verdict="leak"), Console(file=out, width=300)
    )
    # THEN the text is there, on memprobe's own lines, and no line starts like memprobe's
    lines = out.getvalue().splitlines()
    assert not [line for line in lines if line.startswith(forged)], lines
    assert any(forged in line for line in lines)
    line = progress_line(_hostile_state(), 1.0)
    assert "\n" not in line
