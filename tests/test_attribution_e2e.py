"""End to end: the real CLI on the sample corpus names each leak's culprit; non-leaks get none."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import pytest

from conftest import CORPUS_SCRIPTS, CorpusRun, validate
from memprobe import record as rec
from memprobe.analysis import analyze
from memprobe.analysis.culprit import attribute

pytestmark = pytest.mark.slow  # they read the corpus runs (conftest.corpus_runs)


def _top_leak(record: Dict[str, Any]) -> Dict[str, Any]:
    leaks: List[Dict[str, Any]] = [f for f in record["findings"] if f["verdict"] == "leak"]
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


def test_loss_list_names_losses_tensor_graph_and_item(
    corpus_runs: Dict[str, CorpusRun], schema: Dict[str, Any]
) -> None:
    # GIVEN the classic leak: every loss tensor appended to a module-level list
    run = corpus_runs["leak_loss_list.py"]
    assert not run.failure, run.failure
    record, stderr = run.record(), run.stderr
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


# script -> (type, holder substring or None, holds graph, fix-hint substring)
CORPUS: Dict[str, Tuple[Optional[str], Optional[str], Optional[bool], str]] = {
    "leak_loss_list.py": ("torch.Tensor", "losses", True, ".item()"),
    # after the last optimizer step: judged on seconds, explained by that phase's censuses
    "leak_eval_after_training.py": ("torch.Tensor", "main:val_outputs", True, "no_grad"),
    "leak_total_loss.py": ("torch.Tensor", "total_loss", True, ".item()"),
    "leak_rnn_hidden.py": ("torch.Tensor", "hidden", True, "detach"),
    "leak_running_stats.py": ("torch.Tensor", "mean", True, "detach"),
    "leak_episode_history.py": (None, "history", None, ""),
    "leak_model_clones.py": ("ConvNet", "SNAPSHOTS", False, "load_state_dict"),
    "leak_matplotlib_figures.py": ("matplotlib.figure.Figure", None, False, "plt.close"),
    "leak_numpy_temps.py": ("numpy.ndarray", "kept", False, "preallocate"),
    "leak_pure_python.py": ("dict", "EVENT_LOG", False, "deque(maxlen"),
    "leak_small_metrics.py": ("dict", "metrics_log", False, "deque(maxlen"),
    "leak_layer_grad_hists.py": ("torch.Tensor", "trainer.grad_hists[*]", False, "deque(maxlen"),
    # memory outside Python's objects: the handle on it that grew (an in-memory database)
    "leak_sqlite_audit.py": ("sqlite3.Connection", "AUDIT.db", False, "really deletes"),
}
OK_SCRIPTS: List[str] = [s for s in CORPUS_SCRIPTS if s.startswith("ok_")]


@pytest.mark.parametrize("script", sorted(CORPUS))
def test_corpus_leak_culprits(script: str, corpus_runs: Dict[str, CorpusRun]) -> None:
    if script not in corpus_runs:
        pytest.skip(f"{script} is not in the corpus")
    want_type, want_holder, want_graph, want_hint = CORPUS[script]
    run = corpus_runs[script]
    assert not run.failure, run.failure
    top = _top_leak(run.record())
    culprit = top["culprit"]
    assert culprit is not None, top
    if want_type is not None:
        assert want_type in culprit["type"], culprit
    if want_holder is not None:
        assert culprit["holder"] is not None and want_holder in culprit["holder"], culprit
    if want_graph is not None:
        assert culprit["holds_autograd_graph"] is want_graph, culprit
    assert want_hint in (top["fix_hint"] or ""), top["fix_hint"]


def test_one_list_per_parameter_is_one_finding(corpus_runs: Dict[str, CorpusRun]) -> None:
    # GIVEN a trainer keeping a gradient histogram per parameter per step, one list per
    # parameter name in a dict: six containers grow side by side
    run = corpus_runs["leak_layer_grad_hists.py"]
    assert not run.failure, run.failure
    record = run.record()
    leaks = [f for f in record["findings"] if f["verdict"] == "leak"]
    # THEN one finding names the dict's items, says the others grow too, and carries the
    # six containers' signals
    assert len(leaks) == 1, [f["culprit"] for f in leaks]
    top = leaks[0]
    assert top["culprit"]["holder"].endswith("main:trainer.grad_hists[*]"), top["culprit"]
    assert "So do 5 more like it in the same container" in top["explanation"]
    assert len(top["evidence"]["siblings"]) == 6
    grown = [s for s in top["signals"] if s.startswith("container:")]
    assert len(grown) == 6, top["signals"]


@pytest.mark.parametrize("script", OK_SCRIPTS)
def test_corpus_non_leaks_get_no_culprit(script: str, corpus_runs: Dict[str, CorpusRun]) -> None:
    # GIVEN a non-leak's run record (its own findings are empty: nothing to blame)
    run = corpus_runs[script]
    assert not run.failure, run.failure
    record = rec.load(str(run.path))
    assert record.verdict != "leak" and all(f.culprit is None for f in record.findings)
    # WHEN attribution is asked to explain a leak on every signal of every process anyway,
    # as if the detector had called each one a leak
    verdicts = analyze(record).verdicts
    forced = [
        rec.Finding(signal=name, pid=p.pid, verdict="leak", kind="leak")
        for p in record.processes
        for name in p.series
    ]
    blamed = attribute(record, forced, verdicts)
    # THEN its census shows no holder gaining items: no container is named, except the
    # per-epoch lists of the sawtooth (they do grow within an epoch, and are cleared)
    holders = {h for h in (f.holder for f in blamed) if h}
    allowed = FORCED_HOLDERS.get(script, ())
    assert {h for h in holders if not any(h.endswith(a) for a in allowed)} == set(), holders


# what attribution may name in a non-leak when asked to explain a leak it does not have
FORCED_HOLDERS: Dict[str, Tuple[str, ...]] = {
    "ok_epoch_sawtooth.py": ("metrics.preds", "metrics.targets"),
}
