"""A training loop that starts helpers with subprocess: a Python child that leaks
(an "exporter" keeping every record it writes) and a non-Python one (``sleep``).

The Python child gets its own memprobe agent through the inherited environment;
``sleep`` is seen from outside only (psutil). The main loop itself is clean.
"""

import argparse
import subprocess
import sys
import time


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
    import torch
    from torch import nn

    torch.set_num_threads(1)
    exporter = subprocess.Popen([sys.executable, __file__, "--child", "--seconds",
                                 str(args.seconds)])
    sleeper = subprocess.Popen(["sleep", str(args.seconds)])
    model = nn.Linear(32, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    t0 = time.monotonic()
    step = 0
    while time.monotonic() - t0 < args.seconds:
        x = torch.randn(16, 32)
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), x[:, :1]).backward()
        optimizer.step()
        step += 1
        time.sleep(0.02)
    print(f"main: {step} steps; exporter exit {exporter.wait()}, sleep exit {sleeper.wait()}")


if __name__ == "__main__":
    main()
