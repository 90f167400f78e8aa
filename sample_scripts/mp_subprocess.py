"""A (pure Python) training loop that starts helpers with subprocess: a Python child that leaks
(an "exporter" keeping every record it writes) and a non-Python one (``sleep``).

The Python child gets its own memprobe agent through the inherited environment;
``sleep`` is seen from outside only (psutil). The main loop itself is clean.
"""

import argparse
import subprocess
import sys
import time

try:
    from memprobe import step as mark_step
except ImportError:  # running without memprobe installed: nothing to mark

    def mark_step() -> None:
        pass


def child(seconds: float) -> None:
    kept = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        kept.append(bytearray(64 * 1024))  # BUG: the exporter never drops what it wrote
        time.sleep(0.01)
    print(f"exporter: kept {len(kept)} records")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    if args.child:
        child(args.seconds)
        return
    exporter = subprocess.Popen(
        [sys.executable, __file__, "--child", "--seconds", str(args.seconds)]
    )
    sleeper = subprocess.Popen(["sleep", str(args.seconds)])
    weights = [0.0] * 256
    t0 = time.monotonic()
    step = 0
    while time.monotonic() - t0 < args.seconds:
        batch = [float(i % 7) for i in range(256)]
        weights = [w - 1e-3 * (w - b) for w, b in zip(weights, batch)]  # a bounded update
        step += 1
        mark_step()
        time.sleep(0.02)
    print(f"main: {step} steps; exporter exit {exporter.wait()}, sleep exit {sleeper.wait()}")


if __name__ == "__main__":
    main()
