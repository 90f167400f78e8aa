# expect: leak
# holder: Timer|threading._active|_active
# pattern: NumPy-only real-time recommendation scorer with an in-process session feature store (no torch, no optimizer, ~25 ms per request: a numpy two-layer scorer over 8192 candidates, code in main() + SessionFeatureStore/Scorer classes); SessionFeatureStore.put() replaces a session's 64x512 float32 history block (128 KB) and enforces the 15-minute TTL with one daemon threading.Timer per write whose args carry (key, value) so _expire() can compare-and-delete; the superseded timer is never cancelled, so every live Timer thread (in threading._active) keeps an old history block alive for 900 s, i.e. far past the end of the run, and memory (plus the thread count) climbs steadily
# step_ms: 25
"""Session-aware candidate scorer for the home-feed recommendation service.

Each request carries a session id and the item the user just interacted with.
The session's recent-interaction history (the last 64 item embeddings) lives
in an in-process feature store with a TTL, so abandoned sessions disappear on
their own; a write supersedes the previous history of the session, and the
expiry of an old write only removes the row if it was not overwritten since.
"""
import argparse
import os
import threading
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one BLAS thread per serving process
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

EMB = 512
HIST = 64
N_ITEMS = 20000
N_CANDIDATES = 8192


class SessionFeatureStore:
    def __init__(self, ttl_s):
        self.ttl_s = ttl_s
        self._rows = {}
        self._lock = threading.Lock()
        self.expired = 0
        self.writes = 0

    def get(self, key):
        with self._lock:
            return self._rows.get(key)

    def put(self, key, value):
        with self._lock:
            self._rows[key] = value
            self.writes += 1
        timer = threading.Timer(self.ttl_s, self._expire, args=(key, value))
        timer.daemon = True  # never block interpreter shutdown on pending expiries
        timer.start()

    def _expire(self, key, value):
        with self._lock:
            if self._rows.get(key) is value:  # only if not overwritten since
                del self._rows[key]
                self.expired += 1

    def __len__(self):
        return len(self._rows)


class Scorer:
    def __init__(self, rng):
        self.items = (rng.standard_normal((N_ITEMS, EMB)) / np.sqrt(EMB)).astype(np.float32)
        self.w1 = (rng.standard_normal((2 * EMB, 256)) / np.sqrt(2 * EMB)).astype(np.float32)
        self.w2 = (rng.standard_normal((256, 1)) / np.sqrt(256)).astype(np.float32)
        self.decay = (0.9 ** np.arange(HIST)[::-1]).astype(np.float32)

    def session_vector(self, hist):
        w = self.decay / self.decay.sum()
        return w @ hist

    def score(self, hist, cand_ids):
        s = self.session_vector(hist)
        c = self.items[cand_ids]
        # split first layer: [s, c] @ w1 == s @ w1[:EMB] + c @ w1[EMB:]
        h = np.maximum(c @ self.w1[EMB:] + s @ self.w1[:EMB], 0.0)
        return (h @ self.w2).ravel() + c @ s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=700)
    ap.add_argument("--sessions", type=int, default=96)
    ap.add_argument("--ttl", type=float, default=900.0)
    args = ap.parse_args()
    rng = np.random.default_rng(7)

    store = SessionFeatureStore(ttl_s=args.ttl)
    scorer = Scorer(rng)
    # warm start: restore the active sessions from the last snapshot
    for k in range(args.sessions):
        recent = rng.integers(0, N_ITEMS, size=HIST)
        store.put(f"s{k:05d}", scorer.items[recent].copy())
    served = 0
    clicks = 0
    t0 = time.time()
    for step in range(1, args.steps + 1):
        sid = f"s{int(rng.zipf(1.2)) % args.sessions:05d}"
        hist = store.get(sid)
        if hist is None:
            hist = np.zeros((HIST, EMB), dtype=np.float32)
        cands = rng.choice(N_ITEMS, size=N_CANDIDATES, replace=False)
        scores = scorer.score(hist, cands)
        top = cands[np.argsort(-scores)[:20]]
        clicked = int(top[rng.integers(0, 20)])
        clicks += 1
        # the interaction is appended to the session history (newest last)
        new_hist = np.concatenate([hist[1:], scorer.items[clicked][None, :]], axis=0)
        store.put(sid, new_hist)
        served += 1
        if step % 100 == 0:
            print(f"req {step:5d}  sessions {len(store):4d}  writes {store.writes}  "
                  f"expired {store.expired}  {time.time() - t0:.1f}s", flush=True)
    print(f"served {served} requests, {clicks} interactions logged")


if __name__ == "__main__":
    main()
