# expect: leak
# holder: copyreg.dispatch_table|dispatch_table
# pattern: read path of an in-process online feature store (NumPy + stdlib, no torch; one step = one feature request for 256 entities, ~1 ms, code in main() + FeatureTable/RowFactory/FeatureServer classes). Responses are lists of namedtuple rows whose type depends on the requested projection (the column list, in request order); RowFactory caches one namedtuple class per projection in an OrderedDict LRU capped at 256 types, and because classes made at run time cannot be pickled by reference it registers a reducer for every new class with copyreg.pickle(cls, lambda ...) so responses can be pickled into the response cache / wire format. Production models reuse a few dozen projections, but about half of the traffic comes from ad-hoc explainability/debug queries with never-repeating column lists, so new classes keep being created; the LRU evicts them, but copyreg.dispatch_table (a module-level dict in the stdlib) still maps every class ever created to its reducer closure, so every namedtuple class (~8-9 KB with its generated __new__, field descriptors and docstrings) stays alive and the table grows for the whole run, although RowFactory never holds more than 256 types.
# step_ms: 1
"""Online feature-store read path.

FeatureServer.get(entity_ids, columns) returns one namedtuple row per
entity with exactly the requested columns, pickles the response (wire
format + small response cache) and keeps per-projection latency stats.
"""
import collections
import copyreg
import os
import pickle
import time
import zlib
from collections import OrderedDict

import numpy as np
import psutil

N_ENTITIES = 60_000
N_REQUESTS = 18_000
BATCH = 256

BASE_FEATURES = [
    "clicks_1d", "clicks_7d", "clicks_30d", "views_1d", "views_7d", "views_30d",
    "carts_7d", "orders_7d", "orders_30d", "spend_7d", "spend_30d", "spend_90d",
    "refunds_90d", "sessions_7d", "avg_session_s", "bounce_rate", "ctr_7d", "cvr_30d",
    "days_since_order", "days_since_visit", "tenure_days", "n_devices", "n_addresses",
    "pct_mobile", "pct_night", "avg_basket", "max_basket", "coupon_rate", "return_rate",
    "support_tickets", "nps_last", "email_open_rate", "push_open_rate", "wishlist_size",
    "brand_entropy", "cat_entropy", "price_sens", "promo_sens", "churn_score",
    "ltv_pred", "fraud_score", "geo_cluster", "age_bucket", "income_bucket",
    "loyalty_tier", "last_cat_id", "top_cat_id", "emb_norm",
]


def rss_mb():
    return psutil.Process(os.getpid()).memory_info().rss / 2**20


class FeatureTable:
    def __init__(self, rng):
        self.columns = {name: i for i, name in enumerate(BASE_FEATURES)}
        self.values = rng.gamma(2.0, 1.5, size=(N_ENTITIES, len(BASE_FEATURES))).astype(np.float32)
        self.version = np.zeros(N_ENTITIES, np.int64)

    def apply_updates(self, rng, n=256):
        rows = rng.integers(0, N_ENTITIES, size=n)
        cols = rng.integers(0, len(BASE_FEATURES), size=n)
        self.values[rows, cols] = rng.gamma(2.0, 1.5, size=n).astype(np.float32)
        self.version[rows] += 1

    def fetch(self, entity_ids, columns):
        idx = [self.columns[c] for c in columns]
        return self.values[np.ix_(entity_ids, idx)]


def _rebuild_row(fields, values):
    return FACTORY.row_type(fields)._make(values)


class RowFactory:
    """namedtuple row types per projection, cached in a small LRU."""

    def __init__(self, maxsize=256):
        self.maxsize = maxsize
        self._types = OrderedDict()
        self.created = 0

    def row_type(self, fields):
        cls = self._types.get(fields)
        if cls is not None:
            self._types.move_to_end(fields)
            return cls
        cls = collections.namedtuple("FeatureRow", fields)
        # Classes created at run time can't be pickled by reference (pickle
        # would look for module.FeatureRow); teach pickle how to rebuild them.
        copyreg.pickle(cls, lambda row, _f=fields: (_rebuild_row, (_f, tuple(row))))
        self._types[fields] = cls
        self.created += 1
        if len(self._types) > self.maxsize:
            self._types.popitem(last=False)
        return cls


FACTORY = RowFactory()


class FeatureServer:
    def __init__(self, table, factory, cache_size=512):
        self.table = table
        self.factory = factory
        self.cache = OrderedDict()
        self.cache_size = cache_size
        self.lat = collections.defaultdict(lambda: [0, 0.0])
        self.bytes_out = 0

    def get(self, request_id, entity_ids, columns):
        t0 = time.perf_counter()
        fields = tuple(columns)
        row_cls = self.factory.row_type(fields)
        block = self.table.fetch(entity_ids, columns)
        rows = [row_cls._make(v) for v in block.round(4).tolist()]
        payload = zlib.compress(pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL), 1)
        self.bytes_out += len(payload)
        self.cache[request_id] = payload
        if len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)
        st = self.lat[len(columns)]
        st[0] += 1
        st[1] += time.perf_counter() - t0
        return payload


def make_traffic(rng):
    """Production models with fixed projections + ad-hoc debug projections."""
    prod = []
    for m in range(36):
        k = int(rng.integers(8, 20))
        prod.append(tuple(rng.choice(BASE_FEATURES, size=k, replace=False)))
    weights = 1.0 / np.arange(1, len(prod) + 1)
    weights /= weights.sum()

    def next_request():
        if rng.random() < 0.5:
            return prod[int(rng.choice(len(prod), p=weights))]
        # explainability / debugging tools: the top attributed features of the
        # item being inspected, in attribution order -> practically unique
        k = int(rng.integers(5, 15))
        return tuple(rng.choice(BASE_FEATURES, size=k, replace=False))

    return next_request


def main():
    rng = np.random.default_rng(1234)
    table = FeatureTable(rng)
    server = FeatureServer(table, FACTORY)
    next_request = make_traffic(rng)
    verify_every = 50
    t0 = time.perf_counter()
    print(f"feature store with {N_ENTITIES} entities x {len(BASE_FEATURES)} features; "
          f"rss at loop start {rss_mb():.1f} MB", flush=True)
    for step in range(N_REQUESTS):
        columns = next_request()
        ids = rng.integers(0, N_ENTITIES, size=BATCH)
        payload = server.get(step, ids, columns)
        if step % verify_every == 0:
            rows = pickle.loads(zlib.decompress(payload))
            assert rows[0]._fields == columns and len(rows) == BATCH
        if step % 10 == 0:
            table.apply_updates(rng)
        if (step + 1) % 3000 == 0:
            el = time.perf_counter() - t0
            print(f"  req {step + 1:5d}  {el / (step + 1) * 1e3:.2f} ms/req  "
                  f"out {server.bytes_out / 2**20:.1f} MB  row types live "
                  f"{len(FACTORY._types)}  rss {rss_mb():.1f} MB", flush=True)
    print(f"loop done; rss at loop end {rss_mb():.1f} MB", flush=True)
    worst = max(server.lat.items(), key=lambda kv: kv[1][1] / kv[1][0])
    print(f"slowest projection width {worst[0]}: {worst[1][1] / worst[1][0] * 1e3:.2f} ms avg")


if __name__ == "__main__":
    main()
