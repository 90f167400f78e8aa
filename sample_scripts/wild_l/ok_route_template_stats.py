# expect: no_leak
# pattern: pure-Python access-log aggregator keeps a RouteStats object (240-bucket latency histogram + fixed ring of recent latencies) per (service, API version + route template, method, zone); raw paths carry ids/uuids/hashes and query strings but are normalised to templates, so the key space is finite (~35k series) and only looks unbounded while the rarer series keep turning up for the first ~40% of the run (coupon-collector curve), after which the dict stops growing
# step_ms: 2
"""Streaming access-log aggregator.

Parses combined-log-format lines, normalises the request path into a route
template (numeric ids, UUIDs and hex digests become placeholders) and keeps
latency histograms per (service, template, method, zone) for the p99 board.
"""
import random
import re
from array import array
import time
from datetime import datetime

RUN_SECONDS = 22.0
LINES_PER_TICK = 40

SERVICES = [f"svc-{name}" for name in (
    "auth", "billing", "catalog", "checkout", "search", "profile", "ledger", "notify",
    "inventory", "pricing", "reviews", "shipping", "media", "geo", "fraud", "ads",
    "feed", "chat", "export", "audit", "tax", "promo", "wishlist", "returns")]
RESOURCES = ["users", "orders", "items", "carts", "invoices", "sessions", "tickets", "files",
             "accounts", "events", "reports", "tokens", "rules", "jobs", "tags", "plans"]
SUFFIXES = ["", "/history", "/status", "/items", "/children", "/audit", "/export", "/preview",
            "/lock", "/share", "/comments", "/attachments", "/links", "/metrics", "/raw"]
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
ZONES = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]

LINE_RE = re.compile(
    r'(?P<ip>\S+) - - \[(?P<ts>[^\]]+)\] "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/1\.1" '
    r'(?P<status>\d{3}) (?P<size>\d+) (?P<svc>\S+) (?P<zone>\S+) (?P<latency>[\d.]+) "(?P<ua>[^"]*)"')
NORMALISERS = [
    (re.compile(r"/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "/{uuid}"),
    (re.compile(r"/[0-9a-f]{32,64}"), "/{hash}"),
    (re.compile(r"/\d+"), "/{id}"),
]
UA_CLASSES = [(re.compile(p), name) for p, name in (
    (r"bot|crawler|spider", "bot"), (r"okhttp|Dalvik", "android"), (r"CFNetwork|Darwin", "ios"),
    (r"curl|python-requests|Go-http-client", "script"), (r"Mozilla", "browser"))]

BUCKET_EDGES = [0.1 * 1.04 ** i for i in range(240)]
RECENT = 16


class RouteStats:
    __slots__ = ("count", "errors", "hist", "recent", "max_ms")

    # recent latencies live in a fixed-size ring (array of doubles)

    def __init__(self):
        self.count = 0
        self.errors = 0
        self.hist = [0] * len(BUCKET_EDGES)
        self.recent = array("d", bytes(8 * RECENT))
        self.max_ms = 0.0

    def add(self, latency_ms, is_error):
        self.count += 1
        self.errors += is_error
        lo, hi = 0, len(BUCKET_EDGES) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if BUCKET_EDGES[mid] < latency_ms:
                lo = mid + 1
            else:
                hi = mid
        self.hist[lo] += 1
        self.recent[self.count % RECENT] = latency_ms
        if latency_ms > self.max_ms:
            self.max_ms = latency_ms

    def quantile(self, q):
        target = q * self.count
        acc = 0
        for i, c in enumerate(self.hist):
            acc += c
            if acc >= target:
                return BUCKET_EDGES[i]
        return BUCKET_EDGES[-1]


def normalise(path):
    path = path.split("?", 1)[0]
    for rx, repl in NORMALISERS:
        path = rx.sub(repl, path)
    return path


def classify_ua(ua):
    for rx, name in UA_CLASSES:
        if rx.search(ua):
            return name
    return "other"


class LogGenerator:
    USER_AGENTS = ["Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0", "okhttp/4.12.0",
                   "MyApp/3.2 CFNetwork/1410 Darwin/22.6.0", "python-requests/2.31",
                   "Googlebot/2.1 (+http://www.google.com/bot.html)", "Go-http-client/2.0"]

    def __init__(self, seed=1):
        self.rng = random.Random(seed)
        self.routes = []
        for svc in SERVICES:
            for res in RESOURCES:
                for suf in self.rng.sample(SUFFIXES, 5):
                    methods = self.rng.sample(METHODS, self.rng.randint(2, 4))
                    self.routes.append((svc, res, suf, methods))
        # each resource uses one id scheme (numeric, uuid or content hash)
        self.id_scheme = {res: i % 3 for i, res in enumerate(RESOURCES)}

    def _ident(self, res):
        scheme = self.id_scheme[res]
        if scheme == 0:
            return str(self.rng.randrange(10 ** 9))
        if scheme == 1:
            h = "%032x" % self.rng.getrandbits(128)
            return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        return "%040x" % self.rng.getrandbits(160)

    def lines(self, n):
        rng = self.rng
        out = []
        for _ in range(n):
            svc, res, suf, methods = rng.choice(self.routes)
            r = rng.random()
            status = 200 if r < 0.9 else (404 if r < 0.97 else 503)
            latency = rng.lognormvariate(1.5, 0.7) * (3 if status == 503 else 1)
            path = f"/{rng.choice(('v1', 'v2'))}/{res}/{self._ident(res)}{suf}?trace={rng.getrandbits(48):x}"
            out.append(f'10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)} - - '
                       f'[27/Nov/2024:12:{rng.randrange(60):02d}:{rng.randrange(60):02d} +0000] '
                       f'"{rng.choice(methods)} {path} HTTP/1.1" {status} {rng.randrange(100, 50000)} '
                       f'{svc} {rng.choice(ZONES)} {latency:.3f} "{rng.choice(self.USER_AGENTS)}"')
        return out


def main():
    gen = LogGenerator()
    stats = {}
    per_minute = {}
    ua_counts = {}
    bad_lines = 0
    t0 = time.time()
    last_report = t0
    total = 0
    while time.time() - t0 < RUN_SECONDS:
        for line in gen.lines(LINES_PER_TICK):
            m = LINE_RE.match(line)
            if m is None:
                bad_lines += 1
                continue
            status = int(m["status"])
            ts = datetime.strptime(m["ts"], "%d/%b/%Y:%H:%M:%S %z")
            minute = ts.replace(second=0)
            per_minute[minute] = per_minute.get(minute, 0) + 1
            ua = classify_ua(m["ua"])
            ua_counts[ua] = ua_counts.get(ua, 0) + 1
            key = (m["svc"], normalise(m["path"]), m["method"], m["zone"])
            entry = stats.get(key)
            if entry is None:
                entry = stats[key] = RouteStats()
            entry.add(float(m["latency"]), status >= 500)
            total += 1
        if time.time() - last_report > 4.0:
            busiest = max(stats.items(), key=lambda kv: kv[1].count)
            print(f"t={time.time() - t0:5.1f}s lines={total} series={len(stats)} "
                  f"busiest={busiest[0][0]}{busiest[0][1]} p99={busiest[1].quantile(0.99):.1f}ms",
                  flush=True)
            last_report = time.time()
    print(f"done: {total} lines, {len(stats)} series, {bad_lines} unparsable, ua={ua_counts}")


if __name__ == "__main__":
    main()
