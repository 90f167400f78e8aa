"""The tools the style guide names, run as tests so CI enforces them."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        ["mypy"],
        ["mypy", "--strict", "benchmarks", "tests"],
        ["lint-imports", "--no-logo"],
    ],
    ids=["ruff-check", "ruff-format", "mypy-strict", "mypy-strict-tests", "import-layers"],
)
def test_tool_is_clean(argv: List[str]) -> None:
    proc = subprocess.run([_tool(argv[0]), *argv[1:]], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def _checkout_files() -> List[str]:
    """The files of the checkout: tracked, and untracked ones git does not ignore."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    return [p for p in out.decode().split("\0") if p and (ROOT / p).is_file()]


@pytest.mark.slow
def test_mypy_strict_on_a_plain_copy_checks_every_file(tmp_path: Path) -> None:
    # GIVEN a plain copy of the checkout: nothing installed from it, no caches
    copy = tmp_path / "checkout"
    for rel in _checkout_files():
        dest = copy / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest)
    # WHEN mypy runs there with the project's configuration
    proc = subprocess.run(
        [_tool("mypy"), "--verbose", "--cache-dir", str(tmp_path / "cache")],
        cwd=copy,
        capture_output=True,
        text=True,
    )
    # THEN it is clean, and what it checked is every .py file of the copy's package, the
    # agent and its bootstrap included
    assert proc.returncode == 0, proc.stdout[-3000:]
    checked = {
        Path(p)
        for p in re.findall(r"Found source: +BuildSource\(path='([^']+)'", proc.stderr)
        if p.endswith(".py")
    }
    expected = {p.resolve() for p in (copy / "memprobe").rglob("*.py")}
    assert {p.resolve() for p in checked} == expected
    assert any("bootstrap" in p.parts for p in checked)


# The orchestration (what runs the target and turns its files into a record, and the
# commands on top) stays in small pieces: style guide §8, issue 14. The analysis, the
# renderers and the agent are held to their own reviews, not to these numbers.
ORCHESTRATION = ["memprobe/cli.py", "memprobe/launch", "memprobe/collect", "memprobe/commands"]
SMALL_MODULES = ["memprobe/launch", "memprobe/collect", "memprobe/commands", "memprobe/record"]
MAX_FUNCTION_LINES = 60  # a function's body: its signature and docstring are not counted
MAX_MODULE_LINES = 300
# Justified exceptions, "path:function" or "path": none today.
SIZE_EXCEPTIONS: Dict[str, str] = {}


def _py_files(places: List[str]) -> List[Path]:
    out: List[Path] = []
    for place in places:
        path = ROOT / place
        out.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return out


def _body_lines(node: ast.AST) -> int:
    """Lines from a function's first statement after its docstring to its end: a typer
    command's option declarations and a long docstring do not count."""
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    body = node.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    end = node.end_lineno or body[-1].lineno
    return end - body[0].lineno + 1


def test_orchestration_functions_stay_short() -> None:
    # GIVEN every function and method of the orchestration
    too_long = []
    for path in _py_files(ORCHESTRATION):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = _body_lines(node)
                if n > MAX_FUNCTION_LINES and f"{rel}:{node.name}" not in SIZE_EXCEPTIONS:
                    too_long.append(f"{rel}:{node.lineno} {node.name}() is {n} lines")
    # THEN none is longer than a screen: split it into named steps
    assert not too_long, "\n".join(too_long)


def test_launch_collect_commands_and_record_modules_stay_small() -> None:
    # GIVEN every module of the packages that run the target and build the record
    too_big = []
    for path in _py_files(SMALL_MODULES):
        rel = path.relative_to(ROOT).as_posix()
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_MODULE_LINES and rel not in SIZE_EXCEPTIONS:
            too_big.append(f"{rel} is {n} lines")
    # THEN each is small enough to read whole: split it by responsibility
    assert not too_big, "\n".join(too_big)
