"""A Ctrl-C that lands while the agent's census runs in this process' main thread.

A watcher thread waits until the main thread is inside the agent's census (a big heap makes
it last), then sends this process SIGINT. The loop catches KeyboardInterrupt as a training
script would, and prints where it was raised: the files of the traceback's frames.
"""

import os
import signal
import sys
import threading
import time
import traceback

import memprobe

HEAP = [[i] for i in range(600_000)]  # a census over these (gc-tracked) takes a few hundred ms
sent = threading.Event()


def watch_main() -> None:
    main = threading.main_thread().ident
    assert main is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        f = sys._current_frames().get(main)
        while f is not None:
            if f.f_code.co_filename.endswith(os.path.join("memprobe_agent", "census.py")):
                os.kill(os.getpid(), signal.SIGINT)
                sent.set()
                return
            f = f.f_back
        del f
        time.sleep(0.001)


threading.Thread(target=watch_main, daemon=True).start()
t_sent = None
try:
    for _ in range(1, 100_000):
        memprobe.step()
        if sent.is_set() and t_sent is None:
            t_sent = time.monotonic()
        if t_sent is not None and time.monotonic() - t_sent > 10:
            print("NO INTERRUPT", flush=True)
            sys.exit(3)
        time.sleep(0.001)
except KeyboardInterrupt:
    frames = traceback.extract_tb(sys.exc_info()[2])
    print("INTERRUPTED at", ";".join(f.filename for f in frames), flush=True)
    print("SENT", sent.is_set(), flush=True)
