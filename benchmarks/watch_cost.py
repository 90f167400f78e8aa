"""What ``memprobe.watch`` costs on big objects.

    python benchmarks/watch_cost.py sizes          # one deep-size measurement, timed
    memprobe run benchmarks/watch_cost.py loop [--watch]   # a 1 ms step loop, watched or not

``sizes`` prints, per object, the estimate, the exact figure where cheap to know, and
the median and worst time of 20 measurements (each is one sample of
``watch:NAME:bytes``): a list of 10^6 tuples, a dict of 10^6 entries, a replay buffer
of 1,000 tensors of 1 MiB (1 GiB) and 1,000 views of one 1 GiB tensor.
``loop`` runs 20,000 steps of ~1 ms of work next to a list of 10^6 tuples (watched with
``--watch``) and prints the steps per second: the two runs' ratio is the watch's cost
to the training loop.
"""

import json
import statistics
import sys
import time

import memprobe

STEPS = 20_000


def sizes() -> None:
    import torch

    from memprobe.bootstrap.memprobe_agent.deepsize import deep_size

    items = [(float(i), i) for i in range(10**6)]
    table = {i: str(i) for i in range(10**6)}
    tensors = [torch.ones(256 * 1024) for _ in range(1000)]  # 1 MiB each
    big = torch.ones(1024, 256 * 1024)  # 1 GiB
    views = [big[i] for i in range(1024)]
    cases = {
        "list of 10^6 (float, int) tuples": (items, None),
        "dict of 10^6 int -> str": (table, None),
        "list of 1,000 tensors of 1 MiB": (tensors, 1000 * 2**20),
        "list of 1,024 views of one 1 GiB tensor": (views, 2**30),
    }
    for name, (obj, exact) in cases.items():
        runs = [deep_size(obj) for _ in range(20)]
        secs = sorted(r.seconds for r in runs)
        print(
            json.dumps(
                {
                    "object": name,
                    "estimate_bytes": runs[-1].bytes,
                    "storage_bytes": exact,
                    "median_ms": round(1e3 * statistics.median(secs), 2),
                    "max_ms": round(1e3 * secs[-1], 2),
                }
            )
        )


def loop(watch: bool) -> None:
    buffer = [(float(i), i) for i in range(10**6)]
    if watch:
        memprobe.watch("buffer", buffer)
    work = [float(i) for i in range(20000)]
    t0 = time.perf_counter()
    for step in range(STEPS):
        sum(work)  # ~1 ms of work a step
        buffer[step] = (0.0, step)
        memprobe.step()
    took = time.perf_counter() - t0
    print(json.dumps({"watch": watch, "steps_per_s": round(STEPS / took, 1)}))


if __name__ == "__main__":
    if sys.argv[1] == "sizes":
        sizes()
    else:
        loop("--watch" in sys.argv)
