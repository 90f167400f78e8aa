# expect: no_leak
# pattern: session-based next-item recommender served under torch.inference_mode (GRU cell over item embeddings, full-catalogue scoring, no optimizer); every never-seen session id gets a SessionState (GRU hidden tensor + ring of the last 20 item embeddings, ~6 KB) in a TTLCache (OrderedDict ordered by last access) and a janitor thread evicts sessions idle for more than ttl=7 s every 0.25 s; new sessions keep arriving at a steady rate, so the number of live states grows for the first ~7 s (about 40-45% of the run) and then stays at arrival-rate x TTL
# step_ms: 10
"""Session-based recommendations with per-session GRU state kept in a TTL cache.

Events (session_id, item_id) arrive in micro-batches; each session's hidden
state is advanced by one GRU step and the next items are scored against the
whole catalogue.  Idle sessions are expired by a background janitor thread.
"""
import argparse
import itertools
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

N_ITEMS = 40000
EMB = 64
HIDDEN = 128
RECENT = 20

log = logging.getLogger("sessrec")


@dataclass
class SessionState:
    hidden: torch.Tensor
    recent: np.ndarray = field(default_factory=lambda: np.zeros((RECENT, EMB), dtype=np.float32))
    n_events: int = 0
    last_seen: float = 0.0


class TTLCache:
    def __init__(self, ttl, sweep_every=0.25):
        self.ttl = ttl
        self._data = OrderedDict()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.expired = 0
        self._janitor = threading.Thread(target=self._sweep_loop, args=(sweep_every,), daemon=True,
                                         name="ttl-janitor")
        self._janitor.start()

    def get_or_create(self, key, factory):
        now = time.monotonic()
        with self._lock:
            st = self._data.get(key)
            if st is None:
                st = self._data[key] = factory()
            else:
                self._data.move_to_end(key)
            st.last_seen = now
            return st

    def _sweep_loop(self, every):
        while not self._stop.wait(every):
            cutoff = time.monotonic() - self.ttl
            with self._lock:
                while self._data:
                    key, st = next(iter(self._data.items()))
                    if st.last_seen >= cutoff:
                        break
                    del self._data[key]
                    self.expired += 1

    def close(self):
        self._stop.set()
        self._janitor.join()

    def __len__(self):
        return len(self._data)


class SessionGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.items = nn.Embedding(N_ITEMS, EMB)
        self.cell = nn.GRUCell(EMB, HIDDEN)
        self.proj = nn.Linear(HIDDEN, EMB)

    def step(self, item_ids, h, out=None):
        e = self.items(item_ids)
        h = self.cell(e, h)
        q = self.proj(h)
        if out is None:
            return e, h, q @ self.items.weight.T
        # serving path: write the catalogue scores into a reused buffer
        return e, h, torch.mm(q, self.items.weight.T, out=out[: len(q)])


def event_stream(rng, new_per_step, batch):
    """Yields (session_ids, item_ids); sessions have a geometric number of events."""
    sid_counter = itertools.count(1_000_000)
    active = {}
    pop = np.arange(N_ITEMS)
    popularity = 1.0 / (1 + pop) ** 0.8
    popularity /= popularity.sum()
    while True:
        for _ in range(rng.poisson(new_per_step)):
            active[next(sid_counter)] = [int(rng.geometric(0.3)), int(rng.choice(N_ITEMS, p=popularity))]
        keys = list(active)
        chosen = rng.choice(len(keys), size=min(batch, len(keys)), replace=False)
        sids, iids = [], []
        for j in chosen:
            sid = keys[j]
            left, last = active[sid]
            item = (last + int(rng.integers(1, 50))) % N_ITEMS if rng.random() < 0.7 else \
                int(rng.choice(N_ITEMS, p=popularity))
            sids.append(sid)
            iids.append(item)
            if left <= 1:
                del active[sid]
            else:
                active[sid] = [left - 1, item]
        yield sids, iids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--ttl", type=float, default=7.0)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--new-per-step", type=float, default=9.0)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    model = SessionGRU().eval()
    cache = TTLCache(ttl=args.ttl)
    new_state = lambda: SessionState(hidden=torch.zeros(HIDDEN))
    stream = event_stream(rng, args.new_per_step, args.batch)
    hits_at_10 = []
    pending_targets = {}
    shown = set()
    t0 = time.perf_counter()

    with torch.inference_mode():
        score_buf = torch.empty(args.batch, N_ITEMS)
        for step in range(1, args.steps + 1):
            sids, iids = next(stream)
            states = [cache.get_or_create(s, new_state) for s in sids]
            # score the previous recommendation against what the user actually clicked
            for s, i in zip(sids, iids):
                top = pending_targets.pop(s, None)
                if top is not None:
                    hits_at_10.append(i in top)
            h = torch.stack([st.hidden for st in states])
            e, h_new, scores = model.step(torch.tensor(iids), h, out=score_buf)
            # diversity re-rank: penalise items close to what the session just saw
            recent = torch.from_numpy(np.stack([st.recent[:4] for st in states]))
            sim = torch.einsum("bre,ne->bn", F.normalize(recent, dim=-1), model.items.weight[:2048])
            scores[:, :2048] -= 0.1 * sim
            top = scores.topk(10, dim=1).indices.tolist()
            e_np = e.numpy()
            for k, st in enumerate(states):
                st.hidden = h_new[k].clone()
                st.recent[st.n_events % RECENT] = e_np[k]
                st.n_events += 1
                pending_targets[sids[k]] = set(top[k])
                shown.update(top[k])
            if len(pending_targets) > 4 * args.batch * 50:
                # the stream never revisits finished sessions: drop the oldest half
                for key in list(itertools.islice(pending_targets, len(pending_targets) // 2)):
                    del pending_targets[key]
            if step % 200 == 0:
                rate = np.mean(hits_at_10[-2000:]) if hits_at_10 else 0.0
                log.info("step %4d  live sessions %6d  expired %6d  hit@10 %.3f  coverage %.3f  %.1f ms/step",
                         step, len(cache), cache.expired, rate, len(shown) / N_ITEMS,
                         1000 * (time.perf_counter() - t0) / step)
                shown.clear()
    cache.close()
    log.info("served %d steps in %.1fs", args.steps, time.perf_counter() - t0)


if __name__ == "__main__":
    main()
