"""GPU paths. On CPU: memprobe never initialises CUDA and records no CUDA series. On a GPU
machine (skipped elsewhere): allocator series, NVML per process, leak vs fragmentation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SAMPLES, SCRIPTS, load, main_process, run_cli

pytestmark = pytest.mark.slow  # end to end: the real CLI as a subprocess

torch = pytest.importorskip("torch")
HAS_GPU = torch.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
# a step of these loops takes ≈ 1.5 ms on an H200: the scripts' CPU defaults would end in a
# second, so on the GPU they run ≈ 12 s (leak: 8,000 × 512 KiB = 4 GiB of device memory)
GPU_STEPS = ["--steps", "8000"]


def test_cpu_run_never_initialises_cuda(tmp_path: Path) -> None:
    # GIVEN a torch script that only asks torch.cuda.is_available()
    info = tmp_path / "info.json"
    out = tmp_path / "run.json"
    proc = run_cli(["run", "-o", str(out), str(SCRIPTS / "cuda_probe.py"), str(info)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # THEN, seen from inside the target, CUDA was never initialised (by it or by memprobe)
    seen = json.loads(info.read_text())
    assert seen == {"cuda_initialized": False, "device": "cpu"}
    record = load(out)
    main = main_process(record)
    assert main["steps"] == 60
    assert not [s for s in main["series"] if s.startswith("cuda:")]
    if not HAS_GPU:
        assert record["limits"]["gpu_bytes"] == []
        assert any(e["kind"] == "no_gpu" for e in record["events"])


@gpu
def test_gpu_series_and_nvml_when_the_target_uses_cuda(tmp_path: Path) -> None:
    info = tmp_path / "info.json"
    out = tmp_path / "run.json"
    env = dict(__import__("os").environ, USE_CUDA="1", OMP_NUM_THREADS="1")
    proc = run_cli(
        ["run", "-o", str(out), str(SCRIPTS / "cuda_probe.py"), str(info)], cwd=tmp_path, env=env
    )
    assert proc.returncode == 0, proc.stderr
    record = load(out)
    main = main_process(record)
    assert "cuda:0/allocated_bytes" in main["series"]
    assert "cuda:0/reserved_bytes" in main["series"]
    assert record["limits"]["gpu_bytes"] and record["limits"]["gpu_bytes"][0] > 0
    # AND the driver's per-process figure, read by the parent through NVML
    assert "nvml:0/used_bytes" in main["series"]


@gpu
def test_gpu_leak_is_a_leak_with_holder_and_projection(tmp_path: Path) -> None:
    # GIVEN a loop that keeps one device tensor per step in a list
    out = tmp_path / "run.json"
    script = str(SAMPLES / "gpu_leak_tensor_list.py")
    proc = run_cli(["run", "-o", str(out), script, *GPU_STEPS], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = load(out)
    assert record["verdict"] == "leak"
    gpu_findings = [
        f
        for f in record["findings"]
        if f["verdict"] == "leak"
        and any(s.startswith("cuda:0/allocated") for s in f.get("signals") or [f["signal"]])
    ]
    assert gpu_findings, [f["signal"] for f in record["findings"]]
    lead = gpu_findings[0]
    # AND the device, which fills first, leads: its rate and its limit are the projection's
    assert lead["signal"] == "cuda:0/allocated_bytes", lead["signal"]
    assert lead["projected_oom"] is not None
    assert lead["projected_oom"]["limit_bytes"] == record["limits"]["gpu_bytes"][0]
    # AND it names what holds the device tensors: the script's debug list, a torch.Tensor
    culprit = lead["culprit"]
    assert culprit is not None, lead
    assert "debug_activations" in (culprit["holder"] or ""), culprit
    assert culprit["type"] == "torch.Tensor", culprit


@gpu
def test_gpu_fragmentation_is_not_a_leak(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    script = str(SAMPLES / "gpu_fragmentation.py")
    proc = run_cli(["run", "-o", str(out), script, "--steps", "2000"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = load(out)
    assert record["verdict"] != "leak"
    assert any(f.get("kind") == "fragmentation" for f in record["findings"])


@gpu
def test_gpu_clean_loop_is_no_leak(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    proc = run_cli(["run", "-o", str(out), str(SAMPLES / "gpu_clean.py"), *GPU_STEPS], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert load(out)["verdict"] == "no_leak"


@gpu
def test_gpu_loop_keeping_losses_in_a_local_names_the_local(tmp_path: Path) -> None:
    # GIVEN main() keeping each step's loss (and its graph) in a local list, on the GPU
    out = tmp_path / "run.json"
    script = str(SAMPLES / "gpu" / "leak_local_losses.py")
    proc = run_cli(["run", "-o", str(out), script, *GPU_STEPS], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = load(out)
    # THEN a leak named by the local that holds it
    assert record["verdict"] == "leak"
    culprit = record["findings"][0]["culprit"]
    assert culprit is not None and culprit["holder"].endswith("main:losses"), culprit


@gpu
def test_gpu_trainer_with_variable_batches_is_no_leak(tmp_path: Path) -> None:
    # GIVEN a correct trainer object whose batch sizes vary (reserved moves, allocated bounded)
    out = tmp_path / "run.json"
    script = str(SAMPLES / "gpu" / "ok_trainer_varlen.py")
    proc = run_cli(["run", "-o", str(out), script, *GPU_STEPS], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert load(out)["verdict"] == "no_leak"
