"""memprobe.track(): the agent in this very process, judged as `memprobe run` judges."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, cast

import pytest

import memprobe
from conftest import run_cli
from memprobe.inprocess import Run, TrackError

# a sample at every step and a few hundred steps: a leak of one object a step is plain
FAST = {"sample_interval_s": 0.0}
STEPS = 300


class Item:
    def __init__(self, i: int) -> None:
        self.payload = [i] * 20


KEPT: List[Item] = []


def _loop(leak: bool, step: Any = memprobe.step) -> None:
    for i in range(STEPS):
        if leak:
            KEPT.append(Item(i))
        scratch = [Item(j) for j in range(20)]  # allocated and freed every step
        del scratch
        time.sleep(0.003)
        step()


def _agent_threads() -> List[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("memprobe")]


def test_leaky_loop_is_a_leak_with_its_holder() -> None:
    # GIVEN a loop that keeps one Item a step in a module-level list
    KEPT.clear()
    # WHEN it runs inside track()
    with memprobe.track(**FAST) as run:
        _loop(leak=True)
    KEPT.clear()
    # THEN the verdict is leak and the culprit is held by that list
    assert run.verdict == "leak"
    holders = {cast(Dict[str, Any], f.culprit or {}).get("holder") for f in run.leaks()}
    assert "test_inprocess.KEPT" in holders, [f.explanation for f in run.leaks()]
    assert "test_inprocess.KEPT" in run.summary()
    assert "test_inprocess.KEPT" in run.report()
    assert _agent_threads() == []


def test_clean_loop_is_not_a_leak_and_run_step_marks_steps() -> None:
    # GIVEN a loop that frees what it allocates, stepping through run.step()
    with memprobe.track(**FAST) as run:
        _loop(leak=False, step=lambda: run.step())
    # THEN nothing leaks, and every step was seen
    assert run.verdict != "leak", [f.explanation for f in run.leaks()]
    assert run.record is not None
    assert run.record.processes[0].steps == STEPS


def test_two_runs_in_a_row_and_nothing_left_running() -> None:
    before = set(threading.enumerate())
    for _ in range(2):
        with memprobe.track(**FAST) as run:
            for _ in range(30):
                memprobe.step()
        assert run.record is not None
        assert run.record.processes[0].steps == 30
        # no thread of ours, and no file or folder left
        assert set(threading.enumerate()) <= before
        assert run.run_dir is None
    memprobe.step()  # outside a block: a no-op, as without memprobe


def test_a_second_track_inside_the_first_is_refused() -> None:
    with memprobe.track(**FAST):
        with pytest.raises(TrackError, match="already sampled"):
            with memprobe.track():
                pass
    assert _agent_threads() == []


def test_results_before_the_block_ends_say_so() -> None:
    run = Run()
    with pytest.raises(TrackError, match="after the"):
        _ = run.verdict


def test_the_blocks_exception_passes_through_and_is_still_judged() -> None:
    with pytest.raises(ZeroDivisionError):
        with memprobe.track(**FAST) as run:
            for _ in range(20):
                memprobe.step()
            _ = 1 / 0
    assert run.record is not None and run.record.exit.code == 1
    assert _agent_threads() == []


def test_optimizer_hook_is_removed_when_the_block_ends() -> None:
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    from torch.optim.optimizer import _global_optimizer_post_hooks as hooks

    n_hooks = len(hooks)

    def train(n: int) -> None:
        for _ in range(n):
            opt.zero_grad()
            model(torch.ones(1, 2)).sum().backward()
            opt.step()

    with memprobe.track(**FAST) as run:
        deadline = time.monotonic() + 5
        while len(hooks) == n_hooks and time.monotonic() < deadline:
            time.sleep(0.01)  # the agent's thread registers the hook shortly after start
        train(25)
    assert run.record is not None and run.record.processes[0].steps == 25
    assert len(hooks) == n_hooks
    train(3)  # and stepping afterwards reaches no agent


@pytest.mark.slow
def test_saved_record_loads_in_memprobe_report_and_diff(tmp_path: Path) -> None:
    # GIVEN a leaky and a clean run.json saved by track()
    KEPT.clear()
    with memprobe.track(**FAST) as leaky:
        _loop(leak=True)
    KEPT.clear()
    with memprobe.track(**FAST) as clean:
        _loop(leak=False)
    leaky.save(str(tmp_path / "leaky.json"))
    clean.save(str(tmp_path / "clean.json"))
    # THEN memprobe report reads it, with the holder, and diff compares the two
    data = json.loads((tmp_path / "leaky.json").read_text())
    assert data["verdict"] == "leak"
    proc = run_cli(["report", str(tmp_path / "leaky.json")])
    assert proc.returncode == 0, proc.stderr
    assert "test_inprocess.KEPT" in proc.stdout
    proc = run_cli(["diff", str(tmp_path / "leaky.json"), str(tmp_path / "clean.json")])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sys.modules.get("memprobe_agent") is not None  # loaded by track(), idle
