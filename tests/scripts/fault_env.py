"""Does something rude to its own process mid-run, keeps stepping, then reports.

fault_env.py MODE REPORT_FILE      MODE: chdir | stdout | gc | safepath
"""

import gc
import io
import json
import os
import sys
import tempfile
import time

import memprobe

mode, report = sys.argv[1], os.path.abspath(sys.argv[2])
seen = {"path0": sys.path[0], "agent": "memprobe_agent" in sys.modules}
kept = []


def steps(n: int) -> None:
    for _ in range(n):
        kept.append([0] * 256)
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
steps(40)
print("to the replaced or real stdout")
if mode == "stdout":
    seen["captured"] = sys.stdout.getvalue()
seen["steps"] = len(kept)
seen["cwd"] = os.getcwd()
with open(report, "w") as f:
    json.dump(seen, f)
