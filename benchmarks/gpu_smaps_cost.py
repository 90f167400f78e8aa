"""What one USS/PSS read (a walk of ``/proc/PID/smaps_rollup``) costs on a process that uses
CUDA, against the same process on the CPU: the parent's reads are paced by this cost.

    python benchmarks/gpu_smaps_cost.py
"""

from __future__ import annotations

import subprocess
import sys
import time

CHILD = """
import sys, time, torch
device = sys.argv[1]
x = [torch.randn(1024, 1024, device=device) for _ in range(64)]
print("ready", flush=True)
time.sleep(60)
"""


def walk_ms(pid: int, n: int = 20) -> float:
    best = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        with open(f"/proc/{pid}/smaps_rollup") as f:
            f.read()
        best = min(best, (time.perf_counter() - t) * 1e3)
    return best


def main() -> None:
    import torch

    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, device], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None and child.stdout.readline().startswith("ready")
        with open(f"/proc/{child.pid}/maps") as f:
            mappings = len(f.readlines())
        print(f"{device}: {mappings} mappings, smaps_rollup walk {walk_ms(child.pid):.2f} ms")
        child.kill()
        child.wait()


if __name__ == "__main__":
    main()
