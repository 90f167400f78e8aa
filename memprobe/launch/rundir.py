"""Where the run's data goes and what the target is told: the run folder (0700, beside the
record) and the environment that loads the bootstrap with the run's configuration."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from memprobe.bootstrap.memprobe_agent import wire
from memprobe.launch.command import LaunchError

# memprobe/bootstrap/, put first on the target's PYTHONPATH
BOOTSTRAP_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bootstrap"
)


@dataclass(frozen=True)
class RunOptions:
    output: str
    sample_interval_s: float = wire.DEFAULT_SAMPLE_INTERVAL_S
    idle_interval_s: float = wire.DEFAULT_IDLE_INTERVAL_S
    overhead_budget: float = wire.DEFAULT_OVERHEAD_BUDGET
    census: bool = True
    tracemalloc: str = "auto"
    fail_collector: Optional[str] = None  # test-only switch, see --x-fail-collector
    extra_config: Dict[str, Any] = field(default_factory=dict)


def prepare_run_dir(output: str) -> str:
    """Create the run folder beside the record (0700). Fails early if the place is unwritable."""
    out_dir = os.path.dirname(os.path.abspath(output))
    if os.path.isdir(output):
        raise LaunchError(f"output {output} is a directory; give a file name such as run.json")
    if not os.path.isdir(out_dir):
        raise LaunchError(f"cannot write {output}: folder {out_dir} does not exist")
    stem = os.path.abspath(output)
    stem = stem[:-5] if stem.endswith(".json") else stem
    for n in range(1000):
        run_dir = f"{stem}.run" if n == 0 else f"{stem}.run.{n}"
        try:
            os.mkdir(run_dir, 0o700)
            os.chmod(run_dir, 0o700)
            return run_dir
        except FileExistsError:
            continue
        except OSError as e:
            raise LaunchError(f"cannot write beside {output}: {e.strerror}") from None
    raise LaunchError(f"too many run folders named {stem}.run.*; remove old ones")


def make_env(
    run_dir: str, options: RunOptions, base: Optional[Dict[str, str]] = None
) -> Dict[str, str]:
    env = dict(os.environ if base is None else base)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = BOOTSTRAP_DIR + (os.pathsep + old if old else "")
    config = {
        "run_dir": run_dir,
        "wire": wire.WIRE_VERSION,
        "sample_interval_s": options.sample_interval_s,
        "idle_interval_s": options.idle_interval_s,
        "overhead_budget": options.overhead_budget,
        "census": options.census,
        "tracemalloc": options.tracemalloc,
        "fail_collector": options.fail_collector,
        **options.extra_config,
    }
    env[wire.ENV_CONFIG] = json.dumps(config)
    return env
