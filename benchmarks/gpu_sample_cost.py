"""What one cheap sample's CUDA read costs the target, on a GPU: the agent's
``cuda_signals`` (one nested statistics read per device) against the five public calls it
replaced (``memory_allocated``, ``memory_reserved``, ``max_memory_allocated``,
``memory_stats``), both side by side in one process. Prints microseconds per sample.

    python benchmarks/gpu_sample_cost.py
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict

import torch

from memprobe.bootstrap.memprobe_agent import cheap


def public_calls(out: Dict[str, Any]) -> None:
    for i in range(torch.cuda.device_count()):
        out[f"cuda:{i}/allocated_bytes"] = torch.cuda.memory_allocated(i)
        out[f"cuda:{i}/reserved_bytes"] = torch.cuda.memory_reserved(i)
        out[f"cuda:{i}/max_allocated_bytes"] = torch.cuda.max_memory_allocated(i)
        out[f"cuda:{i}/inactive"] = torch.cuda.memory_stats(i).get(
            "inactive_split_bytes.all.current"
        )


def per_call_us(fn: Callable[[Dict[str, Any]], None], n: int = 2000) -> float:
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn({})
        best = min(best, (time.perf_counter() - t) / n * 1e6)
    return best


def main() -> None:
    if not torch.cuda.is_available():
        print("no CUDA GPU: nothing to measure")
        return
    keep = [torch.randn(1024, 1024, device="cuda") for _ in range(8)]
    out: Dict[str, Any] = {}
    cheap.cuda_signals(out)
    print(out)
    assert out["cuda:0/allocated_bytes"] == torch.cuda.memory_allocated(0) > 0
    assert out["cuda:0/reserved_bytes"] == torch.cuda.memory_reserved(0)
    assert out["cuda:0/max_allocated_bytes"] == torch.cuda.max_memory_allocated(0)
    new, old = per_call_us(cheap.cuda_signals), per_call_us(public_calls)
    print(f"cuda_signals {new:.1f} us/sample; the public calls {old:.1f} us ({old / new:.1f}x)")
    del keep


if __name__ == "__main__":
    main()
