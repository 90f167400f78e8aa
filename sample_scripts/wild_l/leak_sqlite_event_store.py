# expect: leak
# holder: conn|store|events|db|EventStore
# pattern: pure-Python API-gateway simulator logs every request into an in-memory sqlite3 table (EventStore.conn) with a 4 s retention job; rows are stamped in milliseconds but prune() computes its cutoff in seconds, so `DELETE ... WHERE ts_ms < ?` never matches and the table (and its indexes) grows for the whole run
# step_ms: 1
"""Request-log store for a small gateway simulator.

Each simulated request is recorded in an in-memory SQLite database so the
dashboard can answer "p95 latency per route over the last N seconds"
queries. A retention job runs every couple of seconds to drop old rows.
"""
import hashlib
import hmac
import json
import random
import sqlite3
import string
import time

ROUTES = [
    "/api/v1/users/{id}", "/api/v1/orders/{id}", "/api/v1/orders",
    "/api/v1/search", "/api/v1/cart/{id}/items", "/healthz",
    "/api/v1/recommendations/{id}", "/api/v1/payments/{id}/capture",
]
RETENTION_S = 4.0
RUN_SECONDS = 20.0
SIGNING_KEY = b"gateway-dev-key"


def now_ms():
    return time.time_ns() // 1_000_000


class EventStore:
    SCHEMA = """
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ts_ms INTEGER NOT NULL,
        route TEXT NOT NULL,
        status INTEGER NOT NULL,
        latency_ms REAL NOT NULL,
        client TEXT NOT NULL,
        meta TEXT
    );
    CREATE INDEX idx_events_ts ON events(ts_ms);
    CREATE INDEX idx_events_route_ts ON events(route, ts_ms);
    """

    def __init__(self, retention_s=RETENTION_S):
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        self.conn.executescript(self.SCHEMA)
        self.retention_s = retention_s
        self._pending = []

    def record(self, route, status, latency_ms, client, meta):
        self._pending.append((now_ms(), route, status, latency_ms, client, json.dumps(meta)))
        if len(self._pending) >= 64:
            self.flush()

    def flush(self):
        if not self._pending:
            return
        self.conn.execute("BEGIN")
        self.conn.executemany(
            "INSERT INTO events (ts_ms, route, status, latency_ms, client, meta) "
            "VALUES (?, ?, ?, ?, ?, ?)", self._pending)
        self.conn.execute("COMMIT")
        self._pending.clear()

    def prune(self):
        cutoff = time.time() - self.retention_s
        cur = self.conn.execute("DELETE FROM events WHERE ts_ms < ?", (cutoff,))
        return cur.rowcount

    def p95_by_route(self, window_s=5.0):
        since = now_ms() - int(window_s * 1000)
        out = {}
        for (route,) in self.conn.execute("SELECT DISTINCT route FROM events"):
            rows = self.conn.execute(
                "SELECT latency_ms FROM events WHERE route = ? AND ts_ms >= ? "
                "ORDER BY latency_ms", (route, since)).fetchall()
            if rows:
                out[route] = rows[int(0.95 * (len(rows) - 1))][0]
        return out


def fake_client_id(rng):
    return "c-" + "".join(rng.choices(string.ascii_lowercase + string.digits, k=10))


def simulate_request(rng, route_template):
    path = route_template.replace("{id}", str(rng.randrange(10 ** 7)))
    base = 4.0 if "search" not in path else 25.0
    latency = rng.lognormvariate(0, 0.6) * base
    status = 200 if rng.random() > 0.02 else rng.choice([429, 500, 502, 503])
    headers = {
        "path": path,
        "ua": rng.choice(["curl/8.4", "okhttp/4.12", "Mozilla/5.0 (X11; Linux x86_64)"]),
        "trace": "%032x" % rng.getrandbits(128),
        "query": {k: rng.randrange(1000) for k in rng.sample("abcdefghij", 4)},
    }
    # simulated handler work: sign the upstream request
    body = json.dumps(headers, sort_keys=True).encode()
    for _ in range(8):
        body = hmac.new(SIGNING_KEY, body, hashlib.sha256).hexdigest().encode() + body[:256]
    headers["sig"] = body[:16].decode()
    return status, latency, headers


def main():
    rng = random.Random(7)
    store = EventStore()
    clients = [fake_client_id(rng) for _ in range(2000)]
    t0 = time.time()
    last_maintenance = t0
    n = 0
    while time.time() - t0 < RUN_SECONDS:
        for _ in range(8):
            route = rng.choice(ROUTES)
            status, latency, headers = simulate_request(rng, route)
            store.record(route, status, latency, rng.choice(clients), headers)
            n += 1
        if time.time() - last_maintenance > 2.5:
            store.flush()
            removed = store.prune()
            p95 = store.p95_by_route()
            worst = max(p95, key=p95.get) if p95 else None
            print(f"t={time.time() - t0:5.1f}s requests={n} pruned={removed} "
                  f"slowest={worst} p95={p95.get(worst, 0):.1f}ms", flush=True)
            last_maintenance = time.time()
    store.flush()
    store.conn.close()


if __name__ == "__main__":
    main()
