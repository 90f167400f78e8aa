# expect: no_leak
# holder:
# pattern: log/event processor that samples gzip'd JSON-lines segments from a fleet of services into per-minute SLO counters (pure Python: gzip, json, re, collections; one step = one "new segment" notification: peek its header record, switch that source's reader to it and consume a budget of 120 records, ~2 ms, code in main() + a read_segment() generator + a SegmentSampler class, segments written once into a TemporaryDirectory). It looks like suspended-generator pile-up: read_segment() decompresses a whole ~150 KB segment into a local bytes object, splits it into a local list of lines and yields parsed records, so every suspended generator frame pins about half a megabyte; a throw-away generator is created just to peek at each segment's first record and then abandoned with next(), and the sampler keeps the current reader of every source in self.readers with most segments never read to the end. But an abandoned generator is closed and freed as soon as its last reference goes (refcount, no cycle), self.readers is keyed by the fixed set of 12 sources and every new segment replaces (and thereby closes) that source's previous reader, per-minute counters are pruned to the last 10 minutes and error samples live in a deque(maxlen=50), so at most 12 suspended readers exist and memory is flat after the first dozen steps.
# step_ms: 2
"""Sampling log processor: per-service, per-minute SLO counters.

Each step handles one 'new segment' notification from the shipping agent:
the segment's header record is peeked to validate the schema, the
source's reader is switched to the new segment, and a fixed budget of
records is consumed (older, unfinished segments are superseded; the
counters are estimates anyway).
"""
import gzip
import json
import os
import random
import re
import tempfile
import time
from collections import Counter, defaultdict, deque

import psutil

N_SOURCES = 12
SEGMENTS_PER_SOURCE = 8
LINES_PER_SEGMENT = 1000
N_STEPS = 10500
BUDGET = 120
ROUTE_RE = re.compile(r"/(\d+|[0-9a-f]{8,})(?=/|$)")


def rss_mb():
    return psutil.Process(os.getpid()).memory_info().rss / 2**20


def write_segments(root, rnd):
    routes = ["/api/v1/users/{}", "/api/v1/orders/{}/items", "/api/v2/search", "/healthz",
              "/api/v1/carts/{}", "/static/app.{}.js", "/api/v1/recs/{}/similar"]
    paths = defaultdict(list)
    for s in range(N_SOURCES):
        svc = f"svc-{s:02d}"
        for k in range(SEGMENTS_PER_SOURCE):
            lines = [json.dumps({"schema": 3, "service": svc, "segment": k})]
            t = 1_700_000_000 + k * 60
            for i in range(LINES_PER_SEGMENT):
                t += rnd.expovariate(30.0)
                route = rnd.choice(routes).format(rnd.choice(
                    [str(rnd.randint(1, 10**7)), "%08x" % rnd.getrandbits(32)]))
                status = rnd.choices([200, 201, 204, 404, 500, 503], [80, 5, 5, 6, 2, 2])[0]
                lines.append(json.dumps({
                    "ts": round(t, 3), "service": svc, "route": route, "status": status,
                    "latency_ms": round(rnd.lognormvariate(3.0, 0.8), 2),
                    "bytes": rnd.randint(200, 90_000), "trace": "%016x" % rnd.getrandbits(64),
                    "ua": rnd.choice(["ios/7.1", "android/12", "web/chrome", "web/firefox"]),
                }))
            path = os.path.join(root, f"{svc}-{k:03d}.jsonl.gz")
            with open(path, "wb") as fh:
                fh.write(gzip.compress("\n".join(lines).encode(), compresslevel=5))
            paths[svc].append(path)
    return paths


def read_segment(path):
    """Yield parsed records of one gzip'd JSON-lines segment."""
    with open(path, "rb") as fh:
        raw = gzip.decompress(fh.read())
    lines = raw.decode().splitlines()
    for line in lines:
        yield json.loads(line)


class SegmentSampler:
    def __init__(self, keep_minutes=10):
        self.readers = {}                    # service -> current segment reader
        self.per_minute = defaultdict(Counter)  # (service, minute) -> counters
        self.keep_minutes = keep_minutes
        self.errors = deque(maxlen=50)
        self.latest_minute = 0
        self.records = 0

    def on_new_segment(self, service, path):
        header = next(read_segment(path))    # peek: validate schema, then drop
        if header.get("schema") != 3:
            raise ValueError(f"unexpected schema in {path}")
        self.readers[service] = read_segment(path)
        next(self.readers[service])          # skip the header record

    def consume(self, service, budget):
        reader = self.readers.get(service)
        if reader is None:
            return 0
        n = 0
        for rec in reader:
            minute = int(rec["ts"] // 60)
            c = self.per_minute[(service, minute)]
            c["requests"] += 1
            c["errors"] += rec["status"] >= 500
            c["slow"] += rec["latency_ms"] > 250
            c["route:" + ROUTE_RE.sub("/:id", rec["route"])] += 1
            if rec["status"] >= 500:
                self.errors.append((service, rec["ts"], rec["route"], rec["trace"]))
            self.latest_minute = max(self.latest_minute, minute)
            n += 1
            if n >= budget:
                break
        else:
            del self.readers[service]        # segment finished
        self.records += n
        return n

    def prune(self):
        cutoff = self.latest_minute - self.keep_minutes
        for key in [k for k in self.per_minute if k[1] < cutoff]:
            del self.per_minute[key]


def main():
    rnd = random.Random(777)
    with tempfile.TemporaryDirectory() as tmp:
        segments = write_segments(tmp, rnd)
        services = sorted(segments)
        t0 = time.perf_counter()
        sampler = SegmentSampler()
        print(f"{N_SOURCES} services x {SEGMENTS_PER_SOURCE} segments; "
              f"rss at loop start {rss_mb():.1f} MB", flush=True)
        for step in range(N_STEPS):
            svc = services[rnd.randrange(N_SOURCES)]
            k = (step // N_SOURCES + rnd.randrange(3)) % SEGMENTS_PER_SOURCE
            sampler.on_new_segment(svc, segments[svc][k])
            sampler.consume(svc, BUDGET)
            # the shipping agent is lagging: the current segments of a couple of
            # other services get a bit more of the budget
            sampler.consume(services[rnd.randrange(N_SOURCES)], BUDGET // 4)
            if step % 100 == 0:
                sampler.prune()
            if (step + 1) % 1000 == 0:
                el = time.perf_counter() - t0
                err = sum(c["errors"] for c in sampler.per_minute.values())
                req = sum(c["requests"] for c in sampler.per_minute.values())
                print(f"  step {step + 1:5d}  records {sampler.records:8d}  open readers "
                      f"{len(sampler.readers):2d}  window err rate {err / max(req, 1):.3%}  "
                      f"{el / (step + 1) * 1e3:.2f} ms/step  rss {rss_mb():.1f} MB", flush=True)
        print(f"loop done; rss at loop end {rss_mb():.1f} MB", flush=True)
        sampler.readers.clear()
    print(f"last errors: {list(sampler.errors)[-2:]}")


if __name__ == "__main__":
    main()
