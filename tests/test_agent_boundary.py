"""The process boundary: the agent pulls in only the standard library, and memprobe's own
site-packages never reach the target, even when the target runs another virtualenv."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

from conftest import SCRIPTS, cli_env, load, main_process, run_cli
from memprobe.launcher import BOOTSTRAP_DIR


def test_bootstrap_folder_holds_only_bootstrap_and_agent() -> None:
    names = {p.name for p in Path(BOOTSTRAP_DIR).iterdir() if p.name != "__pycache__"}
    assert names == {"sitecustomize.py", "memprobe_agent"}


def test_agent_imports_only_the_standard_library(tmp_path: Path) -> None:
    # GIVEN a fresh interpreter with only the bootstrap folder on its path
    code = (
        "import sys, json\n"
        "before = set(sys.modules)\n"
        "import memprobe_agent\n"
        "new = sorted(set(sys.modules) - before)\n"
        "stdlib = sys.stdlib_module_names\n"
        "foreign = [m for m in new if m.split('.')[0] not in stdlib "
        "and not m.startswith('memprobe_agent')]\n"
        "print(json.dumps({'foreign': foreign, 'torch': 'torch' in sys.modules}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env={"PYTHONPATH": BOOTSTRAP_DIR},
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout)
    # THEN every new module is stdlib (or the agent's own) and torch is not among them
    assert result == {"foreign": [], "torch": False}


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


def test_memprobe_step_is_a_noop_unprofiled() -> None:
    code = "import memprobe, sys; memprobe.step(); print('memprobe_agent' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=cli_env()
    )
    assert out.stdout.strip() == "False"


def test_python_m_memprobe_and_console_script_agree(tmp_path: Path) -> None:
    a = run_cli(["--help"])
    b = subprocess.run(
        [str(Path(sys.executable).parent / "memprobe"), "--help"], capture_output=True, text=True
    )
    assert a.returncode == b.returncode == 0
    assert "run" in a.stdout and a.stdout == b.stdout
    assert SCRIPTS.exists()
