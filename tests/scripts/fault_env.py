"""Does something rude to its own process mid-run, keeps stepping, then reports.

    fault_env.py MODE REPORT_FILE      MODE: chdir | stdout | gc | closefds | safepath

closefds closes every descriptor above 2 (as daemonising code does), then writes one line
per step to REPORT_FILE.data, which the number of memprobe's own file may now stand for.
"""

import gc
import io
import json
import os
import sys
import tempfile
import time
from typing import cast

import memprobe

mode, report = sys.argv[1], os.path.abspath(sys.argv[2])
seen = {"path0": sys.path[0], "agent": "memprobe_agent" in sys.modules}
kept: list[list[int]] = []
data = None


def steps(n: int) -> None:
    for i in range(n):
        kept.append([0] * 256)
        if data is not None:
            data.write(f"target line {i}\n")
            data.flush()
        memprobe.step()
        time.sleep(0.005)


steps(20)
if mode == "chdir":
    os.chdir(tempfile.gettempdir())
elif mode == "stdout":
    real = sys.stdout
    sys.stdout = io.StringIO()
    sys.stderr = io.StringIO()
elif mode == "gc":
    gc.disable()
    gc.freeze()
elif mode == "closefds":
    os.closerange(3, 1024)
    data = open(report + ".data", "w")  # noqa: SIM115
steps(40)
print("to the replaced or real stdout")
if mode == "stdout":
    seen["captured"] = cast(io.StringIO, sys.stdout).getvalue()
seen["steps"] = len(kept)
seen["cwd"] = os.getcwd()
with open(report, "w") as f:
    json.dump(seen, f)
