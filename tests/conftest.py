"""Shared helpers: run the real CLI as a subprocess and load what it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
