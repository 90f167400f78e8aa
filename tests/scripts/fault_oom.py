"""Grows 8 MiB per step (pages touched) until the OOM killer ends it; at most ~4 GiB."""

import time

import memprobe

kept = []
for _ in range(500):
    kept.append(bytearray(b"x" * (8 * 1024 * 1024)))
    memprobe.step()
    time.sleep(0.01)
print("fault_oom: never killed", flush=True)
