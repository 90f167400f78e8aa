"""The graph walk never crashes the target (issue 11).

In torch 2.13 a Python wrapper made for an autograd node lives as long as the node,
and a node that owns one is torn down recursively (one native stack level per
wrapped node on a chain). A census that walked a 9,000-step RNN chain made the
target's own teardown overflow its stack. These tests hold the agent to a bounded
number of live wrappers, check that graph counts need none, and run deep, wide,
cyclic and concurrently freed graphs under ``memprobe run`` with censuses back to back.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator, List

import pytest

from conftest import ROOT, SCRIPTS, cli_env, load, main_process, run_cli
from memprobe.bootstrap.memprobe_agent import census, graphs, typeinfo

torch = pytest.importorskip("torch")


def _live_wrappers() -> int:
    types = graphs.node_types()
    return sum(1 for o in gc.get_objects() if type(o) in types)


def _chain(n: int) -> Any:
    w = torch.ones(4, requires_grad=True)
    x = w * 1.0
    for _ in range(n):
        x = x * 1.0001
    return x


@pytest.fixture
def small_cap(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    monkeypatch.setattr(graphs, "MAX_LIVE_WRAPPERS", 50)
    yield 50


def test_budget_counts_only_new_wrappers() -> None:
    # GIVEN a budget of 3 over two wrappers already alive
    budget = graphs.WrapBudget([1, 2], cap=5)
    a, b, c, d = object(), object(), object(), object()
    # WHEN old and new nodes are admitted
    # THEN only new ones cost, and the fourth new one is refused
    assert budget.admit(a) and budget.admit(b) and budget.admit(c)
    assert budget.admit(a)  # seen before: free
    assert not budget.admit(d)
    assert budget.spent and budget.created == 4


def test_graph_counts_make_no_wrapper() -> None:
    # GIVEN 30 separate graphs whose nodes nobody has looked at from Python
    keep: List[Any] = [torch.ones(3, requires_grad=True) * 2 for _ in range(30)]
    before = _live_wrappers()
    # WHEN the tensor pass of a census runs (its graph walk denied any wrapper)
    holding, _ = census._tensor_stats(keep, typeinfo.Kinds(set()), 1, {}, {"tensors": {}}, 1e18, [])
    # THEN it found every graph-holding tensor and made no node wrapper
    assert len(holding) == 30
    assert _live_wrappers() == before
    del keep, holding


def test_census_stays_under_the_wrapper_cap(small_cap: int) -> None:
    # GIVEN a 500-node chain and a cap of 50 live wrappers
    x = _chain(500)
    gc.collect()
    # WHEN censuses run, again and again
    for _ in range(3):
        res = census.take(5_000_000, 4, 10.0)
        g = res["payload"]["graphs"]
        del res
    # THEN at most the cap's worth of wrappers is alive, the walk says why it stopped,
    # no partial graph size is published, and the graph-holding tensor is still counted
    assert _live_wrappers() <= small_cap + 2  # +the fan-out of the last node walked
    assert g["cut"] == "wrappers"
    v = census.take(5_000_000, 4, 10.0)["v"]
    assert "graph:largest" not in v and v["tensors:grad_fn_count"] >= 1
    del x


@pytest.mark.slow
def test_census_then_teardown_of_a_deep_chain_exits_cleanly(tmp_path: Path) -> None:
    # GIVEN a 9,000-step RNN chain (~90,000 nodes) that a census walks, in a fresh process
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT / "memprobe" / "bootstrap")!r})
        import torch
        from torch import nn
        from memprobe_agent import census
        torch.set_num_threads(1)
        rnn = nn.RNN(64, 256)
        h = torch.zeros(1, 16, 256)
        for i in range(9000):
            out, h = rnn(torch.rand(1, 16, 64), h)
            if i in (3000, 6000, 8999):
                census.take(5_000_000, 4, 30.0)
        del out, h
        print("freed")
        """
    )
    # WHEN the chain is freed after the censuses
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    # THEN the process frees it and exits 0 (the unbounded walk died here with SIGSEGV)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "freed" in proc.stdout


SHAPES = [
    "rnn_chain",
    "linear_chain",
    "backward_chain",
    "freed_by_backward",
    "wide",
    "create_graph",
]


def _run_shape(shape: str, out_dir: Path) -> subprocess.CompletedProcess[str]:
    out = out_dir / f"{shape}.json"
    args = ["run", "--budget", "1.0", "-o", str(out), str(SCRIPTS / "graph_shapes.py"), shape, "8"]
    return run_cli(args, cwd=out_dir, timeout=300, env=cli_env({"PYTHONFAULTHANDLER": "1"}))


@pytest.mark.slow
def test_graph_shapes_run_to_the_end_under_memprobe(tmp_path: Path) -> None:
    # GIVEN deep, wide, cyclic and concurrently freed graphs, each for 8 s, with the
    # expensive collectors allowed all the time they want (censuses back to back)
    with ThreadPoolExecutor(max_workers=2) as pool:
        procs = dict(zip(SHAPES, pool.map(lambda s: _run_shape(s, tmp_path), SHAPES)))
    # THEN every one exits 0, as it does plainly, and leaves a record
    for shape, proc in procs.items():
        assert proc.returncode == 0, f"{shape}: rc={proc.returncode}\n{proc.stderr[-2500:]}"
        assert f"{shape}:" in proc.stdout
        record = load(tmp_path / f"{shape}.json")
        assert record["exit"]["code"] == 0
        assert main_process(record)["census"], f"{shape}: no census was taken"
