"""A small training-like loop for the fault tests: steps, grows, then ends as asked.

    fault_target.py READY_FILE STEPS THEN

Writes its pid to READY_FILE (atomically) after 20 steps, so a test knows
samples exist. THEN is what happens after STEPS steps (or, for ``wait``, the
loop keeps stepping until the process is killed, at most 60 s):
``exit:N``, ``os_exit:N``, ``raise``, ``sysexit_msg``, ``segv``, ``wait``,
``sigint_catch:N`` (wait; on KeyboardInterrupt print a line and exit N),
``fill:DIR`` (fill the disk holding DIR, then exit 0).
"""

import os
import sys
import time

import memprobe

ready, steps, then = sys.argv[1], int(sys.argv[2]), sys.argv[3]
kept: list[bytearray] = []


def step(i: int) -> None:
    kept.append(bytearray(64 * 1024))  # a small steady climb
    memprobe.step()
    time.sleep(0.005)
    if i == 20:
        with open(ready + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.replace(ready + ".tmp", ready)


def main() -> None:
    if then.startswith("sigint_catch:"):
        try:
            for i in range(1, 60 * 200):
                step(i)
        except KeyboardInterrupt:
            print("fault_target caught KeyboardInterrupt", flush=True)
            sys.exit(int(then.split(":")[1]))
        sys.exit(99)  # nobody interrupted us: the test failed to
    for i in range(1, steps + 1):
        step(i)
    print("fault_target done", flush=True)
    if then.startswith("exit:"):
        sys.exit(int(then[5:]))
    if then.startswith("os_exit:"):
        sys.stdout.flush()
        os._exit(int(then[8:]))
    if then == "raise":
        raise RuntimeError("boom from fault_target")
    if then == "sysexit_msg":
        sys.exit("fault_target says bye")
    if then == "segv":
        import ctypes

        ctypes.string_at(0)
    if then.startswith("fill:"):
        with open(os.path.join(then[5:], "filler"), "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError as e:
                print(f"fault_target filled the disk: {e.strerror}", flush=True)
        sys.exit(0)
    if then == "wait":
        deadline = time.monotonic() + 60
        i = steps
        while time.monotonic() < deadline:
            i += 1
            step(i)
        sys.exit(99)  # nobody killed us: the test failed to


main()
