"""Shared helpers: run the real CLI as a subprocess and load what it wrote."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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
    mains: List[Dict[str, Any]] = [p for p in record["processes"] if p["role"] == "main"]
    assert mains, f"no main process in {[p['role'] for p in record['processes']]}"
    return mains[0]


@pytest.fixture
def schema() -> Dict[str, Any]:
    from memprobe.record import schema_path

    return load(Path(schema_path()))


def validate(record: Dict[str, Any], schema: Dict[str, Any]) -> None:
    import jsonschema  # type: ignore[import-untyped]

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


# -- the sample corpus, run once per session --------------------------------------------------

CORPUS_SCRIPTS = sorted(p.name for p in SAMPLES.glob("leak_*.py")) + sorted(
    p.name for p in SAMPLES.glob("ok_*.py")
)

# Fewer steps than the scripts' defaults where a script is slow per step, so
# each run stays ~10-20 s on an idle 2-core machine. Every count still leaves
# the leak (or its absence) several times over its detection threshold.
CORPUS_STEPS: Dict[str, int] = {
    "leak_rnn_hidden.py": 120,  # backward time grows with the (leaking) graph
    "leak_matplotlib_figures.py": 250,  # one figure render per 5 steps: 50 figures
    "leak_model_clones.py": 600,  # a deepcopy every 4 steps: 150 clones
    # 200 episodes ended in 4-6 s on these machines, a clock too short to call it
    # within when the machine runs two corpus scripts at once; 2,000: about 11 s here
    "leak_episode_history.py": 2000,
    "leak_loss_list.py": 900,  # called "leak" from step ~150 on
    # one graph chained across every step: on a fast machine their defaults (1,500 and
    # 9,000 steps of about a millisecond) end in 3-5 s, too short a clock to tell a leak
    # from the first steps filling caches; these last 5-10 s there, 15-30 s on a slow one
    "leak_total_loss.py": 5000,
    "leak_rnn_no_detach.py": 30000,
    # six lists, three found by the census at step 25 and three at step 100: their dense
    # lengths need ten points after that, and 1,500 steps end 0.7-1.0 s after step 100 here
    "leak_layer_grad_hists.py": 12000,
    # leak from 65-90 % of their 3.7-5.5 s runs in stop 41's CI run here: on a faster
    # machine the verdict could come after the end; these last 7-9 s (leak from 35-45 %)
    "leak_small_metrics.py": 30000,
    "leak_numpy_temps.py": 6000,
    "leak_running_stats.py": 2800,
    "ok_loss_item.py": 900,  # its fixed twin, same length
    # an idle machine runs these fast: enough steps that the run lasts 10-20 s there too
    "ok_adam_warmup.py": 1200,
    "ok_bounded_cache.py": 3600,
}
CORPUS_WORKERS = 2  # these machines have two cores
CORPUS_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class CorpusRun:
    """One corpus script's run under ``memprobe run``: its record, how long, what it said."""

    path: Path
    seconds: float
    returncode: int
    stderr: str

    @property
    def failure(self) -> str:
        """The end of stderr when memprobe failed, else ''."""
        return self.stderr[-3000:] if self.returncode else ""

    def record(self) -> Dict[str, Any]:
        return load(self.path)


def _run_corpus_script(script: str, out_dir: Path) -> CorpusRun:
    out = out_dir / f"{script}.json"
    args = [sys.executable, "-m", "memprobe", "run", "-o", str(out), str(SAMPLES / script)]
    if script in CORPUS_STEPS:
        args += ["--steps", str(CORPUS_STEPS[script])]
    t0 = time.monotonic()
    proc = subprocess.run(
        args,
        cwd=out_dir,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=CORPUS_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    return CorpusRun(out, time.monotonic() - t0, proc.returncode, proc.stderr)


@pytest.fixture(scope="session")
def corpus_runs(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, CorpusRun]:
    """Every ``sample_scripts/leak_*.py`` and ``ok_*.py`` under ``memprobe run``, once per
    session, two at a time; the corpus and attribution tests read these records."""
    out_dir = tmp_path_factory.mktemp("corpus")
    with ThreadPoolExecutor(max_workers=CORPUS_WORKERS) as pool:
        futures = {s: pool.submit(_run_corpus_script, s, out_dir) for s in CORPUS_SCRIPTS}
        return {script: fut.result() for script, fut in futures.items()}
