# expect: leak
# holder: EVENT_LOG
"""No torch at all: an event log kept at module level grows every iteration.

Each iteration records a small dict with a payload; nothing ever trims the log.
Marks its iterations with memprobe.step() when memprobe is importable.
"""

import argparse
import random
import time

try:
    from memprobe import step as mark_step
except ImportError:  # running without memprobe installed: nothing to mark

    def mark_step() -> None:
        pass


parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=2000)
parser.add_argument("--sleep", type=float, default=0.005)
args = parser.parse_args()

EVENT_LOG = []


def handle(i):
    record = {"i": i, "kind": random.choice(["a", "b", "c"]), "payload": [random.random()] * 64}
    EVENT_LOG.append(record)  # BUG: never trimmed
    return sum(record["payload"])


random.seed(0)
total = 0.0
for i in range(args.steps):
    total += handle(i)
    time.sleep(args.sleep)
    mark_step()
print(f"handled {len(EVENT_LOG)} events, total {total:.1f}")
