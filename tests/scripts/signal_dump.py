"""A job runner that installs a SIGUSR1 progress dump per job: the handler closes over the
job's records and the previous handler, and is never uninstalled. The records are kept
only by the signal module's C table of handlers (the runner itself keeps only the last
job's ``append``, a built-in method)."""

import signal
import sys
import time
from typing import Any, Callable, List

JOBS = int(sys.argv[1]) if len(sys.argv) > 1 else 400  # records, all in the last job


def start_job(name: str) -> Callable[[Any], None]:
    records: List[bytes] = []
    previous = signal.getsignal(signal.SIGUSR1)

    def dump(signum: int, frame: Any) -> None:
        print(f"{name}: {len(records)} records", flush=True)
        if callable(previous):
            previous(signum, frame)

    signal.signal(signal.SIGUSR1, dump)
    return records.append


def main() -> None:
    start_job("warm-up")  # its handler is the next one's ``previous``: a chain of two
    add = start_job("run")
    for _ in range(JOBS):
        add(bytes(2000))
        time.sleep(0.01)
    print(f"{JOBS} records in the last of 2 jobs")


if __name__ == "__main__":
    main()
