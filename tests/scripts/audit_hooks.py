"""A program with PEP 578 audit hooks (data lineage, sandboxes): every audit event runs each
hook, so what a profiler does that raises events costs the program. Counts the events
raised from threads other than its own, by name, and writes them to argv[2] as JSON.

argv[1]: seconds to run. The loop keeps a list of records (a leak the census looks at)."""

import json
import sys
import threading
import time
from collections import Counter
from typing import Any, Dict, List

others: Counter[str] = Counter()
main_ident = threading.get_ident()


def hook(event: str, args: Any) -> None:
    if threading.get_ident() != main_ident:
        others[event] += 1


sys.addaudithook(hook)
records: List[Dict[str, List[int]]] = []
t_end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < t_end:
    records.append({"row": list(range(50))})
    time.sleep(0.001)
with open(sys.argv[2], "w") as f:
    json.dump(dict(others), f)
print(len(records), "records")
