"""Shared helpers: run the real CLI as a subprocess and load what it wrote."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_scripts"
SCRIPTS = ROOT / "tests" / "scripts"


def cli_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.pop("MEMPROBE_CONFIG", None)
    env.update(extra or {})
    return env


def run_cli(
    args: List[str],
    cwd: Optional[Path] = None,
    timeout: float = 240,
    env: Optional[Dict[str, str]] = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m memprobe ARGS`` as a real subprocess, stdin closed."""
    return subprocess.run(
        [sys.executable, "-m", "memprobe", *args],
        cwd=cwd,
        env=env or cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def load(path: Path) -> Dict[str, Any]:
    with open(path) as f:
        data: Dict[str, Any] = json.load(f)
    return data


def main_process(record: Dict[str, Any]) -> Dict[str, Any]:
    mains = [p for p in record["processes"] if p["role"] == "main"]
    assert mains, f"no main process in {[p['role'] for p in record['processes']]}"
    return mains[0]


@pytest.fixture
def schema() -> Dict[str, Any]:
    from memprobe.record import schema_path

    return load(Path(schema_path()))


def validate(record: Dict[str, Any], schema: Dict[str, Any]) -> None:
    import jsonschema

    jsonschema.validate(record, schema)


def is_stdlib(module: str) -> bool:
    """Is ``module`` (dotted) part of the standard library? ``sys.stdlib_module_names`` where
    there is one (3.10+), else where its top-level package lives."""
    top = module.split(".")[0]
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        return top in names
    if top in sys.builtin_module_names:
        return True
    spec = importlib.util.find_spec(top)
    origin = spec.origin if spec is not None else None
    if origin is None or origin in ("built-in", "frozen"):
        return spec is not None
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    real = os.path.realpath(origin)
    return real.startswith(stdlib + os.sep) and "site-packages" not in real
