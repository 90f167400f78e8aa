"""End to end: the real CLI on the sample corpus names each leak's culprit; non-leaks get none."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from conftest import SAMPLES, load, run_cli, validate


def _run(tmp_path: Path, script: str, *args: str) -> Tuple[Dict[str, Any], str]:
    out = tmp_path / "r.json"
    proc = run_cli(
        ["run", "--no-live", "-o", str(out), str(SAMPLES / script), *args],
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return load(out), proc.stderr


def _top_leak(record: Dict[str, Any]) -> Dict[str, Any]:
    leaks = [f for f in record["findings"] if f["verdict"] == "leak"]
    if not leaks:  # say why, for a run that came out short (a loaded machine, a fast one)
        why = {
            name: (s.get("verdict"), s.get("n"), s.get("reason"))
            for sigs in record.get("signals", {}).values()
            for name, s in sigs.items()
            if name.startswith(("container:", "rss", "py_alloc", "graph:", "tensors:"))
        }
        main = [p for p in record["processes"] if p["role"] == "main"]
        steps = [c.get("step") for c in main[0]["census"]] if main else []
        raise AssertionError(
            f"no leak finding; verdict {record['verdict']}; censuses at {steps}; {why}"
        )
    return leaks[0]


def test_loss_list_names_losses_tensor_graph_and_item(tmp_path: Path, schema: dict) -> None:
    # GIVEN the classic leak: every loss tensor appended to a module-level list
    record, stderr = _run(tmp_path, "leak_loss_list.py", "--steps", "400")
    validate(record, schema)
    # THEN the top finding blames that list, the tensor type and the graphs it keeps
    top = _top_leak(record)
    culprit = top["culprit"]
    assert culprit["type"] == "torch.Tensor"
    assert "losses" in culprit["holder"]
    assert culprit["holds_autograd_graph"] is True
    assert ".item()" in top["fix_hint"]
    assert top["evidence"]["pattern"] == "retained graphs"
    # AND the run's summary says so to the person who ran it
    assert "__main__.losses" in stderr and ".item()" in stderr
    # AND the census reached the run record: graph roots grow, the holder is a signal
    main = next(p for p in record["processes"] if p["role"] == "main")
    assert "container:__main__.losses:len" in main["series"]
    assert any(c.get("graphs", {}).get("roots", 0) >= 25 for c in main["census"])


def test_loss_item_twin_gets_no_culprit(tmp_path: Path) -> None:
    # GIVEN the fixed twin (it keeps floats, a few bytes a step)
    record, _ = _run(tmp_path, "ok_loss_item.py", "--steps", "400")
    # THEN nothing is blamed
    assert record["verdict"] != "leak"
    assert all(f.get("culprit") is None for f in record["findings"])


# script -> (type, holder substring or None, holds graph, fix-hint substring)
CORPUS: Dict[str, Tuple[Optional[str], Optional[str], Optional[bool], str]] = {
    "leak_loss_list.py": ("torch.Tensor", "losses", True, ".item()"),
    "leak_total_loss.py": ("torch.Tensor", "total_loss", True, ".item()"),
    "leak_rnn_hidden.py": ("torch.Tensor", "hidden", True, "detach"),
    "leak_running_stats.py": ("torch.Tensor", "mean", True, "detach"),
    "leak_episode_history.py": (None, "history", None, ""),
    "leak_model_clones.py": ("ConvNet", "SNAPSHOTS", False, "load_state_dict"),
    "leak_matplotlib_figures.py": ("matplotlib.figure.Figure", None, False, "plt.close"),
    "leak_numpy_temps.py": ("numpy.ndarray", "kept", False, "preallocate"),
    "leak_pure_python.py": ("dict", "EVENT_LOG", False, "deque(maxlen"),
    "leak_small_metrics.py": ("dict", "metrics_log", False, "deque(maxlen"),
}
OK_SCRIPTS: List[str] = sorted(p.name for p in SAMPLES.glob("ok_*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(CORPUS))
def test_corpus_leak_culprits(tmp_path: Path, script: str) -> None:
    if not (SAMPLES / script).exists():
        pytest.skip(f"{script} is not in the corpus")
    want_type, want_holder, want_graph, want_hint = CORPUS[script]
    record, _ = _run(tmp_path, script)
    top = _top_leak(record)
    culprit = top["culprit"]
    assert culprit is not None, top
    if want_type is not None:
        assert want_type in culprit["type"], culprit
    if want_holder is not None:
        assert culprit["holder"] is not None and want_holder in culprit["holder"], culprit
    if want_graph is not None:
        assert culprit["holds_autograd_graph"] is want_graph, culprit
    assert want_hint in (top["fix_hint"] or ""), top["fix_hint"]


@pytest.mark.slow
@pytest.mark.parametrize("script", OK_SCRIPTS)
def test_corpus_non_leaks_get_no_culprit(tmp_path: Path, script: str) -> None:
    record, _ = _run(tmp_path, script)
    assert all(f.get("culprit") is None for f in record["findings"]), record["findings"]
