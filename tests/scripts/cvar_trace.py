"""A request handler that records spans in a per-request trace held in a ``ContextVar``
declared with a mutable default and never ``set()``: every request's context reads the same
list, so it gathers every request's spans."""

import contextvars
import sys
import time
from typing import Any, Dict, List

# the leak this test plants
trace: contextvars.ContextVar[List[Dict[str, Any]]] = contextvars.ContextVar("trace", default=[])  # noqa: B039
REQUESTS = int(sys.argv[1]) if len(sys.argv) > 1 else 400


def handle(i: int) -> int:
    trace.get().append({"request": i, "payload": bytes(2000)})
    return len(trace.get())


def main() -> None:
    n = 0
    for i in range(REQUESTS):
        n = contextvars.copy_context().run(handle, i)
        time.sleep(0.01)
    print(f"{REQUESTS} requests, {n} spans in the shared trace")


if __name__ == "__main__":
    main()
