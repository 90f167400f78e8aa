"""A consumer that draws from an endless stream through ``itertools.cycle`` "so it never
runs out": over a stream longer than the run, the cycle's first pass never ends and the
cycle keeps every record it handed out (a list inside the C object, held in main()'s
local)."""

import itertools
import sys
import time
from typing import Dict, Iterator

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 400


def stream() -> Iterator[Dict[str, object]]:
    for i in itertools.count():
        yield {"id": i, "payload": bytes(2000)}


def main() -> None:
    records = itertools.cycle(stream())  # the leak this test plants
    total = 0
    for _ in range(STEPS):
        total += len(next(records)["payload"])  # type: ignore[arg-type]
        time.sleep(0.01)
    print(f"{STEPS} records, {total} bytes read")


if __name__ == "__main__":
    main()
