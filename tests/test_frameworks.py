"""Unmodified Hugging Face Trainer, Lightning and accelerate scripts under `memprobe run`.

Each framework's script plants a leak a user of it writes (a callback keeping its probe
outputs, a LightningModule keeping its losses, a loop summing loss tensors); its
``--fixed`` twin does not. The step axis must match the framework's own count of
optimizer steps, the leak must be found and held where the user's code keeps it, and the
twin must not be flagged. Skipped where a framework is not installed
(``pip install -e '.[frameworks]'``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

FRAMEWORKS = Path(__file__).resolve().parents[1] / "sample_scripts" / "frameworks"

# script, module it needs, steps to run
CASES: List[Tuple[str, str, int]] = [
    ("hf_trainer_callback.py", "transformers", 300),
    ("lightning_losses.py", "lightning", 3000),
    ("accelerate_running_loss.py", "accelerate", 4000),
]


def _header(script: Path, key: str) -> str:
    for line in script.read_text().splitlines()[:5]:
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return ""


def _run(tmp_path: Path, script: str, steps: int, fixed: bool) -> Tuple[Dict[str, Any], str]:
    out = tmp_path / ("fixed.json" if fixed else "leak.json")
    cmd = [sys.executable, "-m", "memprobe", "run", "-o", str(out), str(FRAMEWORKS / script)]
    cmd += ["--steps", str(steps)] + (["--fixed"] if fixed else [])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("script,module,steps", CASES, ids=[c[1] for c in CASES])
def test_framework_leak_and_fixed_twin(
    tmp_path: Path, script: str, module: str, steps: int
) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[frameworks]')")
    # GIVEN an unmodified training script of the framework, leaking, and its fixed twin
    leak, stdout = _run(tmp_path, script, steps, fixed=False)
    fixed, fixed_out = _run(tmp_path, script, steps, fixed=True)
    for record, out in ((leak, stdout), (fixed, fixed_out)):
        # THEN the step axis is the framework's own count of optimizer steps
        counted = int(re.findall(r"global steps: (\d+)", out)[-1])
        (main,) = [p for p in record["processes"] if p["role"] == "main"]
        assert main["steps"] == counted == steps, (main["steps"], counted)
    # AND the leak is found, held where the user's code keeps it, at the user's line
    assert leak["verdict"] == "leak", json.dumps(leak["signals"])[:3000]
    found = [f for f in leak["findings"] if f["verdict"] == "leak"]
    holders = [str((f.get("culprit") or {}).get("holder") or "") for f in found]
    wanted = _header(FRAMEWORKS / script, "holder").split("|")
    assert any(w in h for w in wanted for h in holders), holders
    culprit = found[0]["culprit"]
    assert culprit["holder"].startswith(script + ":"), culprit  # from the user's frame
    assert str(culprit.get("location") or "").split(":")[0].endswith(script), culprit
    # AND the fixed twin is not flagged
    assert fixed["verdict"] != "leak", fixed["findings"]
