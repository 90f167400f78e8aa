"""The process boundary: the agent pulls in only the standard library, and memprobe's own
site-packages never reach the target, even when the target runs another virtualenv."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import venv
from pathlib import Path
from typing import List, Tuple

import pytest

from conftest import SCRIPTS, cli_env, is_stdlib, load, main_process, run_cli
from memprobe.bootstrap.memprobe_agent import wire
from memprobe.launch.rundir import BOOTSTRAP_DIR


def test_bootstrap_folder_holds_only_bootstrap_and_agent() -> None:
    names = {p.name for p in Path(BOOTSTRAP_DIR).iterdir() if p.name != "__pycache__"}
    assert names == {"sitecustomize.py", "memprobe_agent"}


@pytest.mark.slow
def test_agent_imports_only_the_standard_library(tmp_path: Path) -> None:
    # GIVEN a fresh interpreter with only the bootstrap folder on its path
    code = (
        "import sys, json\n"
        "before = set(sys.modules)\n"
        "import memprobe_agent\n"
        "memprobe_agent.start  # the core, loaded on first use\n"
        "new = sorted(set(sys.modules) - before)\n"
        "print(json.dumps({'new': new, 'torch': 'torch' in sys.modules}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env={"PYTHONPATH": BOOTSTRAP_DIR},
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout)
    foreign = [m for m in result["new"] if not is_stdlib(m) and not m.startswith("memprobe_agent")]
    # THEN every new module is stdlib (or the agent's own) and torch is not among them
    assert "memprobe_agent.core" in result["new"]
    assert foreign == [] and result["torch"] is False


def _imports(path: Path) -> List[Tuple[int, str]]:
    """(level, module) of every import statement of a file: level 0 absolute, 1+ relative."""
    out: List[Tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.extend((0, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.append((node.level, node.module or ""))
    return out


def test_every_import_statement_of_the_bootstrap_is_stdlib_or_the_agent() -> None:
    # GIVEN every file the target imports from (the bootstrap and the agent)
    files = sorted(Path(BOOTSTRAP_DIR).rglob("*.py"))
    assert len(files) > 10
    # THEN each import statement names the standard library, or the agent itself (relative
    # inside the package; by name from the bootstrap), also in code that runs only sometimes
    bad = [
        (str(f.relative_to(BOOTSTRAP_DIR)), module)
        for f in files
        for level, module in _imports(f)
        if level == 0 and not is_stdlib(module) and module.split(".")[0] != "memprobe_agent"
    ]
    assert bad == []


@pytest.mark.slow
def test_parent_imports_only_the_wire_module_without_loading_the_agent() -> None:
    # GIVEN a fresh interpreter that imports memprobe's parent side as the CLI does
    code = (
        "import sys, json\n"
        "import memprobe.launch.runner, memprobe.commands.run, memprobe.commands.report\n"
        "import memprobe.commands.diff, memprobe.collect.rebuild, memprobe.collect.merge\n"
        "print(json.dumps(sorted(m for m in sys.modules if 'memprobe_agent' in m)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=cli_env()
    )
    # THEN of the agent it has loaded the package (whose import runs nothing) and its wire
    assert json.loads(out.stdout) == [
        "memprobe.bootstrap.memprobe_agent",
        "memprobe.bootstrap.memprobe_agent.wire",
    ]


def test_the_bootstrap_knows_the_agents_oldest_python() -> None:
    # GIVEN sitecustomize.py's own copy (it decides before the agent can be imported)
    tree = ast.parse((Path(BOOTSTRAP_DIR) / "sitecustomize.py").read_text())
    copies = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "_MIN_PYTHON" for t in node.targets)
    ]
    # THEN it is wire.MIN_PYTHON
    assert copies == [wire.MIN_PYTHON]


@pytest.mark.slow
def test_target_in_a_second_virtualenv(tmp_path: Path) -> None:
    # GIVEN memprobe installed in this environment and a second, empty virtualenv
    venv2 = tmp_path / "venv2"
    venv.EnvBuilder(with_pip=False).create(venv2)
    python2 = venv2 / "bin" / "python"
    info = tmp_path / "info.json"
    script = tmp_path / "t.py"
    script.write_text(
        "import json, sys, importlib.util\n"
        "held = [bytearray(100_000) for _ in range(50)]\n"
        f"json.dump({{'memprobe': importlib.util.find_spec('memprobe') is not None,"
        " 'agent': 'memprobe_agent' in sys.modules, 'prefix': sys.prefix,"
        f" 'path': sys.path}}, open({str(info)!r}, 'w'))\n"
    )
    out = tmp_path / "run.json"
    # WHEN the target runs with the second virtualenv's interpreter
    proc = run_cli(["run", "-o", str(out), "--", str(python2), str(script)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(info.read_text())
    # THEN the agent ran there, but memprobe's package is not importable in the target
    assert seen["agent"] is True
    assert seen["memprobe"] is False
    assert seen["prefix"] == str(venv2)
    assert not any("site-packages" in p and str(venv2) not in p for p in seen["path"])
    assert main_process(load(out))["series"]["rss_bytes"]["value"]


@pytest.mark.slow
def test_memprobe_step_is_a_noop_unprofiled() -> None:
    code = "import memprobe, sys; memprobe.step(); print('memprobe_agent' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=cli_env()
    )
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_python_m_memprobe_and_console_script_agree(tmp_path: Path) -> None:
    a = run_cli(["--help"])
    b = subprocess.run(
        [str(Path(sys.executable).parent / "memprobe"), "--help"], capture_output=True, text=True
    )
    assert a.returncode == b.returncode == 0
    assert "run" in a.stdout and a.stdout == b.stdout
    assert SCRIPTS.exists()


@pytest.mark.slow
def test_a_program_that_ends_at_once_still_has_a_memory_point(tmp_path: Path) -> None:
    # GIVEN a script that is done within milliseconds, before any sample is due
    script = tmp_path / "quick.py"
    script.write_text("print(sum(range(10)))\n")
    out = tmp_path / "run.json"
    # WHEN it runs under memprobe
    proc = run_cli(["run", "-o", str(out), str(script)], cwd=tmp_path)
    # THEN it ran as in a plain run, and its record holds its memory at the end
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "45\n"
    assert main_process(load(out))["series"]["rss_bytes"]["value"]
