"""A multiprocessing Pool whose workers keep a module-level cache that never shrinks,
next to a burst of short-lived helper processes (one 50 ms task each).

``--leak``: every task stores its 256 KiB result in the worker's ``_CACHE``; the
pool workers grow, the main process does not. The driver marks each collected
result as a step (``memprobe.step()``), so growth reads per result. The burst
(``maxtasksperchild=1``, 24 tasks in chunks of 3) starts 8 processes that live a
fraction of a second: they must not flood the table or the record.
"""

import argparse
import multiprocessing as mp
import time

try:
    from memprobe import step as mark_step
except ImportError:  # running without memprobe installed: nothing to mark

    def mark_step() -> None:
        pass


_CACHE = {}


def work(i: int, leak: bool) -> int:
    time.sleep(0.04)
    blob = bytes(range(256)) * 1024  # 256 KiB of real (touched) pages
    if leak:
        _CACHE[i] = blob  # BUG: a per-worker cache with no bound
    return len(blob)


def work_leak(i: int) -> int:
    return work(i, True)


def work_clean(i: int) -> int:
    return work(i, False)


def quick(i: int) -> int:
    time.sleep(0.05)
    return i * i


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--leak", action="store_true")
    parser.add_argument("--start-method", choices=["fork", "spawn"], default="fork")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--burst", type=int, default=24)
    args = parser.parse_args()

    ctx = mp.get_context(args.start_method)
    with ctx.Pool(2, maxtasksperchild=1) as burst:  # a fresh process per task
        print("burst:", sum(burst.map(quick, range(args.burst))))
    with ctx.Pool(2) as pool:
        n = int(args.seconds * 2 / 0.04)  # two workers, 40 ms a task: about --seconds long
        done = 0
        for size in pool.imap_unordered(work_leak if args.leak else work_clean, range(n)):
            done += size
            mark_step()  # one result collected = one step of this driver loop
    print(f"pool: {n} tasks, {done / 2**20:.0f} MiB produced, leak={args.leak}")


if __name__ == "__main__":
    main()
