"""The tools the style guide names, run as tests so CI enforces them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

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
        ["lint-imports", "--no-logo"],
    ],
    ids=["ruff-check", "ruff-format", "mypy-strict", "import-layers"],
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
