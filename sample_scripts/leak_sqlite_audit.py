# expect: leak
# holder: AUDIT.db
"""No torch at all: an audit trail kept in an in-memory SQLite table.

Every request writes a few audit rows; a retention job deletes rows older than a
window. The rows are stamped in milliseconds but the cutoff is computed in seconds,
so the DELETE never matches and the table grows for the whole run. No Python object
grows: the rows live in SQLite's own allocator.
"""

import argparse
import random
import sqlite3
import string
import time

try:
    from memprobe import step as mark_step
except ImportError:  # running without memprobe installed: nothing to mark

    def mark_step() -> None:
        pass


class AuditTrail:
    def __init__(self, retention_s: float) -> None:
        self.db = sqlite3.connect(":memory:", isolation_level=None)
        self.db.execute("CREATE TABLE audit (ts INTEGER, actor TEXT, action TEXT, detail TEXT)")
        self.db.execute("CREATE INDEX audit_ts ON audit(ts)")
        self.retention_s = retention_s

    def record(self, rows: list) -> None:
        now_ms = time.time_ns() // 1_000_000
        self.db.executemany("INSERT INTO audit VALUES (?, ?, ?, ?)", [(now_ms, *r) for r in rows])

    def prune(self) -> int:
        cutoff = time.time() - self.retention_s  # BUG: seconds, while ts is in milliseconds
        return self.db.execute("DELETE FROM audit WHERE ts < ?", (cutoff,)).rowcount


def request(rng: random.Random, details: list) -> list:
    actor = "".join(rng.choices(string.ascii_lowercase, k=8))
    actions = ["read", "write", "delete"]
    return [(actor, rng.choice(actions), rng.choice(details)) for _ in range(50)]


parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=1500)
parser.add_argument("--sleep", type=float, default=0.004)
args = parser.parse_args()

AUDIT = AuditTrail(retention_s=2.0)
rng = random.Random(0)
DETAILS = ["".join(rng.choices(string.ascii_letters, k=400)) for _ in range(64)]
pruned = 0
for i in range(args.steps):
    AUDIT.record(request(rng, DETAILS))
    if i % 100 == 0:
        pruned += AUDIT.prune()
    time.sleep(args.sleep)
    mark_step()
count = AUDIT.db.execute("SELECT COUNT(*) FROM audit").fetchone()[0]
print(f"{args.steps} requests, {count} audit rows kept, {pruned} pruned")
