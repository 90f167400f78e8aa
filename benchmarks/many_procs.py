"""R ranks x (1 + W) processes stepping and idling, for benchmarks/bench_procs.py.

    python benchmarks/many_procs.py --ranks 4 --workers 3 --seconds 60    # 16 processes

The main process is rank 0; it starts ranks 1..R-1 with multiprocessing's spawn (fresh
interpreters, each with its own agent and census), and every rank forks W workers
(multiprocessing fork, like DataLoader workers: cheap samples, no census). A rank steps
about 100 times a second (``memprobe.step()``: a sample every 0.1 s), a little CPU and a
sleep each; rank 1 keeps one more small object per step (something for the analysis to
find). Workers idle-loop without steps (time-based samples every 0.5 s). Everything stops
after ``--seconds``.
"""

import argparse
import multiprocessing as mp
import os
import time

import memprobe


def worker(deadline: float) -> None:
    junk = []
    while time.time() < deadline:
        junk = [str(i) for i in range(200)]
        time.sleep(0.05)
    del junk


def rank(r: int, workers: int, deadline: float) -> None:
    os.environ["MANY_PROCS_RANK"] = str(r)
    fork = mp.get_context("fork")
    kids = [fork.Process(target=worker, args=(deadline,)) for _ in range(workers)]
    for k in kids:
        k.start()
    kept = []
    step = 0
    while time.time() < deadline:
        sum(range(2000))
        if r == 1:
            kept.append(bytearray(256))
        time.sleep(0.01)
        memprobe.step()
        step += 1
    for k in kids:
        k.join()
    print(f"rank {r}: {step} steps", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=60.0)
    args = ap.parse_args()
    deadline = time.time() + args.seconds
    spawn = mp.get_context("spawn")
    others = [
        spawn.Process(target=rank, args=(r, args.workers, deadline)) for r in range(1, args.ranks)
    ]
    for p in others:
        p.start()
    rank(0, args.workers, deadline)
    for p in others:
        p.join()


if __name__ == "__main__":
    main()
