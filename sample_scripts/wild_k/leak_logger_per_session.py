# expect: leak
# holder: loggerDict|manager|getLogger|SessionContextFilter|recsvc.session
# pattern: the recommendation service creates logging.getLogger(f"recsvc.session.{sid}") for every user session and attaches a SessionContextFilter holding the session's history embeddings; logging's manager keeps every named logger (and its filters) in Logger.manager.loggerDict forever, although the service drops its own session state when a session ends
# step_ms: 4
"""Session-based next-item recommender served in-process (inference only).

A two-tower model (item embedding table + attention-pooled user tower)
scores the whole catalogue for each request; sessions open, issue a few
requests and close.  Per-session loggers carry the session context so that
any warning can be traced back to the user's recent history.
"""
import logging
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")

N_ITEMS, DIM, HIST = 60000, 96, 96


class SessionContextFilter(logging.Filter):
    def __init__(self, sid, user_id, history_emb):
        super().__init__()
        self.sid = sid
        self.user_id = user_id
        self.history_emb = history_emb       # (HIST, DIM) float32, for debugging odd recommendations

    def filter(self, record):
        record.sid = self.sid
        record.user_id = self.user_id
        record.hist_norm = float(np.linalg.norm(self.history_emb))
        return True


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.items = nn.Embedding(N_ITEMS, DIM)
        self.query = nn.Parameter(torch.randn(DIM) / DIM ** 0.5)
        self.proj = nn.Linear(DIM, DIM)

    def user_vector(self, hist_emb):
        att = F.softmax(hist_emb @ self.query, dim=0)
        return self.proj((att[:, None] * hist_emb).sum(0))

    def forward(self, hist_ids):
        hist_emb = self.items(hist_ids)
        u = self.user_vector(hist_emb)
        return self.items.weight @ u, hist_emb


def make_service(model, rng):
    sessions = {}
    served = {"requests": 0, "sessions": 0}
    on_response = []

    def open_session(sid, user_id):
        hist = torch.from_numpy(rng.integers(0, N_ITEMS, HIST))
        with torch.no_grad():
            hist_emb = model.items(hist).numpy().copy()
        log = logging.getLogger(f"recsvc.session.{sid}")
        log.addFilter(SessionContextFilter(sid, user_id, hist_emb))
        log.debug("session opened")
        sessions[sid] = {"hist": hist, "log": log, "seen": set(hist.tolist())}
        served["sessions"] += 1

    def handle(sid, k=20):
        state = sessions[sid]
        with torch.no_grad():
            scores, _ = model(state["hist"])
            scores[list(state["seen"])] = -float("inf")
            top = torch.topk(scores, k).indices
        clicked = int(top[rng.integers(0, k)])
        state["seen"].add(clicked)
        state["hist"] = torch.cat([state["hist"][1:], torch.tensor([clicked])])
        if scores[top[0]] < 0:
            state["log"].info("all top scores negative")
        served["requests"] += 1
        for cb in on_response:
            cb(sid, top)
        return top

    def close_session(sid):
        state = sessions.pop(sid)
        state["log"].debug("session closed after %d items", len(state["seen"]))

    return open_session, handle, close_session, on_response, served


def main():
    torch.manual_seed(3)
    rng = np.random.default_rng(3)
    model = TwoTower().eval()
    open_session, handle, close_session, on_response, served = make_service(model, rng)

    popularity = np.zeros(N_ITEMS, dtype=np.int64)
    on_response.append(lambda sid, top: np.add.at(popularity, top.numpy(), 1))

    t0 = time.time()
    live = []
    next_sid = 0
    n_ticks = 5400
    for tick in range(1, n_ticks + 1):
        if len(live) < 8 or rng.random() < 0.5:
            next_sid += 1
            open_session(next_sid, int(rng.integers(0, 10**6)))
            live.append(next_sid)
        sid = live[rng.integers(0, len(live))]
        handle(sid)
        if len(live) > 24 or rng.random() < 0.45:
            close_session(live.pop(0))
        if tick % 900 == 0:
            print(f"tick {tick:5d}  open {len(live):3d}  sessions {served['sessions']:5d}  "
                  f"requests {served['requests']:6d}  {time.time() - t0:.1f}s", flush=True)
    for sid in live:
        close_session(sid)
    top_items = np.argsort(popularity)[-5:][::-1]
    print(f"done: {served['sessions']} sessions, {served['requests']} requests, "
          f"most recommended {top_items.tolist()}, {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
