"""Dense evidence wherever a leak is held (issue 12): the agent in a real target process.

A list of loss tensors is held in a function local, a closure, a default argument, a
class attribute, a dict keyed by step or a generator's local; the agent must name it the
way a person would and read its length at the cheap-sample pace (not only at censuses),
and a list the program drops must be freed as in a plain run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import ROOT, SCRIPTS

pytestmark = pytest.mark.slow  # end to end: the real CLI as a subprocess

pytest.importorskip("torch")

SHAPES = {
    "local": "holder_shapes.py:main:losses",
    "closure": "holder_shapes.py:main:log:history",
    "default": "__main__.log_metric(buf=…)",
    "classattr": "__main__.Tracker.records",
    "bystep": "holder_shapes.py:main:by_step",
    # a key of a local dict reads as a key, not an attribute (was ``main:curves.train``)
    "dictoflists": "holder_shapes.py:main:curves['train']",
    # a new list at every step, one item longer (``cb.kept = cb.kept + [loss]``), below a
    # position in a list (``callbacks[1]``): the attribute is what grows, whatever object it
    # is bound to at a census (wild_y/leak_gan_collapse_monitor: no holder before)
    "rebound": "holder_shapes.py:main:callbacks[1].kept",
    "generator": "holder_shapes.py:main:stream:seen",
}


def _agent_run(
    tmp_path: Path, *args: str, script: str = "holder_shapes.py"
) -> Tuple[subprocess.CompletedProcess[str], Path]:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "memprobe" / "bootstrap")
    env["MEMPROBE_CONFIG"] = json.dumps({"run_dir": str(run_dir)})
    env["OMP_NUM_THREADS"] = "1"
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    return proc, run_dir


def _series(run_dir: Path) -> Dict[str, List[float]]:
    out: Dict[str, List[float]] = {}
    for path in run_dir.glob("proc-*.jsonl"):
        for line in path.read_text().splitlines():
            msg = json.loads(line)
            if msg["k"] in ("sample", "census"):
                for name, value in msg.get("v", {}).items():
                    out.setdefault(name, []).append(value)
    return out


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_holder_is_named_and_read_between_censuses(shape: str, tmp_path: Path) -> None:
    # GIVEN 400 steps (~3 s) appending each loss to a list held as ``shape`` says
    proc, run_dir = _agent_run(tmp_path, shape, "400")
    assert proc.returncode == 0, proc.stderr[-2000:]
    series = _series(run_dir)
    # THEN the list's length is a series under the name a person knows it by, with many
    # more points than there were censuses
    name = f"container:{SHAPES[shape]}:len"
    assert name in series, sorted(k for k in series if k.startswith("container:"))
    censuses = sum(p.read_text().count('"k":"census"') for p in run_dir.glob("proc-*.jsonl"))
    assert len(series[name]) >= 20 and len(series[name]) > 3 * censuses
    assert series[name][-1] > series[name][0]


def test_a_graph_carried_in_an_attribute_is_named_with_its_class(tmp_path: Path) -> None:
    # GIVEN 400 steps adding each loss, with its graph, to a running sum kept on an object
    proc, run_dir = _agent_run(tmp_path, "carried", "400")
    assert proc.returncode == 0, proc.stderr[-2000:]
    # THEN a census names the tensor that carries the graph, with the class whose attribute
    # holds it (``Accumulator.running``), as the walk gives it for containers
    types: Dict[str, List[str]] = {}
    for path in run_dir.glob("proc-*.jsonl"):
        for line in path.read_text().splitlines():
            msg = json.loads(line)
            if msg["k"] == "census":
                types.update((msg.get("graphs") or {}).get("holder_types") or {})
    assert types.get("holder_shapes.py:main:acc.running") == ["Accumulator.running"], types


def test_a_bank_two_attributes_down_is_named_as_the_graph_it_keeps(tmp_path: Path) -> None:
    # GIVEN 400 steps writing each step's ``keys`` (with their graph) into a tensor kept as
    # ``mem.bank.feats``: every old ``keys`` graph stays alive below the bank's
    proc, run_dir = _agent_run(tmp_path, "bank", "400")
    assert proc.returncode == 0, proc.stderr[-2000:]
    # THEN the censuses see both as carried, and the bank's current root is the older one:
    # the bank is the state the step reads, ``keys`` the value the step makes
    carried: Dict[str, int] = {}
    for path in run_dir.glob("proc-*.jsonl"):
        for line in path.read_text().splitlines():
            msg = json.loads(line)
            if msg["k"] == "census":
                for c in (msg.get("graphs") or {}).get("carried") or []:
                    carried[c["holder"]] = c["seq"]
    bank, keys = "holder_shapes.py:main:mem.bank.feats", "holder_shapes.py:main:keys"
    assert bank in carried and keys in carried, carried
    assert carried[bank] < carried[keys]


def test_an_exception_raised_again_and_again_is_named_by_its_traceback_chain(
    tmp_path: Path,
) -> None:
    # GIVEN 400 steps that each raise the same module-level exception object and catch it
    # (its ``__traceback__`` gains the frames of every raise: wild_y's ``raise _OVERSIZE``)
    proc, run_dir = _agent_run(tmp_path, "reraised", "400")
    assert proc.returncode == 0, proc.stderr[-2000:]
    # THEN a census follows the chain from the exception a global keeps, longer each time
    seen: List[int] = []
    for path in run_dir.glob("proc-*.jsonl"):
        for line in path.read_text().splitlines():
            msg = json.loads(line)
            for c in msg.get("chains") or [] if msg["k"] == "census" else []:
                if c["type"] == "traceback":
                    assert c["holder"] == "__main__.SKIP.__traceback__" and c["via"] == "tb_next"
                    seen.append(c["links"])
    assert len(seen) >= 2 and seen[-1] > seen[0] >= 12, seen


def test_a_list_the_program_drops_is_freed(tmp_path: Path) -> None:
    # GIVEN a main()-local list watched by the agent, which the program then drops
    proc, run_dir = _agent_run(tmp_path, "drop", "400")
    assert proc.returncode == 0, proc.stderr[-2000:]
    # THEN it is freed at once, as in a plain run (nothing of the agent's keeps it)
    assert "freed" in proc.stdout, proc.stdout
    seconds = float(proc.stdout.split("freed ")[1].split(" s")[0])
    assert seconds < 0.1
    assert any(k.endswith("main:losses:len") for k in _series(run_dir))


def test_dicts_the_gc_does_not_track_are_found_from_the_roots(tmp_path: Path) -> None:
    # GIVEN a memo of numpy arrays keyed by a hash on an object in main(), and a module-global
    # dict of small arrays keyed by step: dicts of atomic values, which gc.get_objects never lists
    proc, run_dir = _agent_run(tmp_path, "600", script="untracked_memo.py")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "untracked: True True" in proc.stdout
    series = _series(run_dir)
    # THEN both are followed under the names a person knows them by, and seen growing
    for name in ("container:untracked_memo.py:main:pipe._cache:len", "container:__main__.SEEN:len"):
        assert name in series, sorted(k for k in series if k.startswith("container:"))
        assert series[name][-1] > series[name][0]


# holders outside any container a census can see from a name: (script, its argument, the
# container's series, the least it must have grown by)
OUT_OF_SIGHT = {
    # a module registered per trial, a few a second, long after the imports: the census
    # runs (no import holds it back) and sys.modules is watched (left alone in an import)
    "sys.modules": ("module_per_trial.py", "60", "container:sys.modules:len", 20),
    # spans appended to a ContextVar's mutable default, a fresh context per request: named
    # as the variable was declared, read between censuses like any holder from the roots
    "contextvar": ("cvar_trace.py", "400", "container:__main__.trace(default=…):len", 20),
    # records an itertools.cycle keeps of a first pass that never ends (a stream longer
    # than the run): the list inside the C object, named through the local that holds it
    "cycle": (
        "cycle_stream.py",
        "400",
        "container:cycle_stream.py:main:records.<cycle saved>:len",
        20,
    ),
    # records a SIGUSR1 handler closes over, kept by the signal module's C table alone: the
    # handler the target installed is a root (signal.getsignal), its closure cells below it
    "signal": (
        "signal_dump.py",
        "400",
        "container:signal.getsignal(signal.SIGUSR1):records:len",
        20,
    ),
}


@pytest.mark.parametrize("case", sorted(OUT_OF_SIGHT))
def test_a_holder_out_of_plain_sight_is_named_and_followed(case: str, tmp_path: Path) -> None:
    script, arg, name, least = OUT_OF_SIGHT[case]
    proc, run_dir = _agent_run(tmp_path, arg, script=script)
    assert proc.returncode == 0, proc.stderr[-2000:]
    series = _series(run_dir)
    assert name in series, sorted(k for k in series if k.startswith("container:"))
    assert len(series[name]) >= 5 and series[name][-1] >= series[name][0] + least
