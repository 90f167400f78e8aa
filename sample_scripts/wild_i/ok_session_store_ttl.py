# expect: no_leak
# pattern: recommendation service keeps per-user session state (numpy taste vector + bounded deque of recent items) in a dict keyed by an ever-increasing stream of user ids; a background sweeper thread deletes sessions idle longer than TTL every 0.2 s under a lock, so the dict holds only ~arrival_rate x TTL sessions and memory plateaus within a few seconds
# step_ms: 5
"""Session-aware recommender front end (simulated traffic).

Each request carries a user id and the item the user just looked at.  The
service keeps a session per active user: an exponentially-weighted taste
vector over item embeddings and the last few items viewed, and answers with
the top items by dot product that the user has not just seen.  Sessions
that have been idle for more than ``SESSION_TTL`` seconds are dropped by a
sweeper thread.  Users arrive continuously; most come back a few times and
then leave.
"""
import random
import threading
import time
from collections import deque

import numpy as np

RUN_SECONDS = 20.0
SESSION_TTL = 2.0
N_ITEMS = 20_000
EMB = 512


class Session:
    __slots__ = ("taste", "recent", "last_seen", "n_requests")

    def __init__(self, now):
        self.taste = np.zeros(EMB, dtype=np.float32)
        self.recent = deque(maxlen=20)
        self.last_seen = now
        self.n_requests = 0


class SessionStore:
    def __init__(self, ttl):
        self.ttl = ttl
        self._sessions = {}
        self._lock = threading.Lock()
        self.expired = 0

    def get_or_create(self, user_id, now):
        with self._lock:
            s = self._sessions.get(user_id)
            if s is None:
                s = Session(now)
                self._sessions[user_id] = s
            s.last_seen = now
            return s

    def sweep(self, now):
        with self._lock:
            dead = [uid for uid, s in self._sessions.items() if now - s.last_seen > self.ttl]
            for uid in dead:
                del self._sessions[uid]
            self.expired += len(dead)

    def __len__(self):
        return len(self._sessions)


def sweeper(store, stop, interval=0.2):
    while not stop.wait(interval):
        store.sweep(time.monotonic())


def main():
    rng = np.random.default_rng(0)
    pyrng = random.Random(0)
    item_emb = rng.standard_normal((N_ITEMS, EMB)).astype(np.float32) / np.sqrt(EMB)
    catalog_sample = rng.integers(0, N_ITEMS, 512)
    catalog = item_emb[catalog_sample]

    store = SessionStore(SESSION_TTL)
    stop = threading.Event()
    th = threading.Thread(target=sweeper, args=(store, stop), daemon=True)
    th.start()

    t0 = time.monotonic()
    last_print = t0
    n_req = 0
    newest_user = 0
    while True:
        now = time.monotonic()
        if now - t0 > RUN_SECONDS:
            break
        for _ in range(20):
            # new users keep arriving; a request goes to a user from the recent window
            if pyrng.random() < 0.25:
                newest_user += 1
            uid = newest_user - pyrng.randrange(0, 300)
            item = pyrng.randrange(N_ITEMS)
            s = store.get_or_create(uid, now)
            s.taste *= 0.8
            s.taste += 0.2 * item_emb[item]
            s.recent.append(item)
            s.n_requests += 1
            scores = catalog @ s.taste
            top = catalog_sample[np.argsort(-scores)[:10]]
            _ = [int(i) for i in top if int(i) not in s.recent][:5]
            n_req += 1
        time.sleep(0.002)
        if now - last_print > 1.0:
            last_print = now
            print(f"{now - t0:5.1f}s requests {n_req} live sessions {len(store)} "
                  f"expired {store.expired}", flush=True)
    stop.set()
    th.join(timeout=1)
    print(f"done: {n_req} requests, {store.expired} sessions expired, {len(store)} live")


if __name__ == "__main__":
    main()
