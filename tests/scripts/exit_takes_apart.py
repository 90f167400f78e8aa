"""A program without steps that fills a list, then takes itself apart in an atexit handler
of its own that clears the list and takes 1.5 s (as ``weakref.finalize``'s handler does when
it calls every pending finalizer): nothing sampled then is the program's memory."""

from __future__ import annotations

import atexit
import time

history: list[bytes] = []


def _take_apart() -> None:
    history.clear()
    time.sleep(1.5)


def main() -> None:
    atexit.register(_take_apart)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3.0:
        history.append(b"x" * 2000)
        time.sleep(0.002)
    print(f"kept {len(history)}", flush=True)


if __name__ == "__main__":
    main()
