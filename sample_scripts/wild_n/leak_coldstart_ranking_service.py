# expect: leak
# holder: store.user_history|self.user_history|store.user_clicks
# pattern: the ranking service's FeatureStore keeps per-user click histories in defaultdict(lambda: np.zeros((HIST_LEN, DIM))) so that unknown users "read as" an all-zero cold-start history; but every read of an anonymous session id (store.user_history[uid], store.user_clicks[uid]) inserts a new zero array that is never written or removed, and anonymous ids never repeat, so the store grows with every request batch (two-tower retrieval inference, torch.inference_mode, no optimizer)
# step_ms: 9
"""Online candidate ranking for a news feed (two-tower model, inference only).

For every request the user tower encodes the user's recent click history
(the last HIST_LEN clicked item embeddings) plus a couple of engagement
counters, and the top-k items are retrieved from the catalogue by dot product.
Logged-in users get their clicks written back to the feature store; anonymous
sessions are ranked from an empty (cold-start) history and their clicks are
not persisted.

Traffic and clicks are simulated so the script runs standalone.
"""
import argparse
import time
from collections import defaultdict

import numpy as np
import torch
from torch import nn

HIST_LEN = 16
DIM = 32


class FeatureStore:
    """In-process user feature store (would be backed by Redis in production)."""

    def __init__(self, hist_len=HIST_LEN, dim=DIM):
        self.hist_len = hist_len
        self.dim = dim
        # unknown users simply have an all-zero history
        self.user_history = defaultdict(lambda: np.zeros((hist_len, dim), dtype=np.float32))
        self.user_clicks = defaultdict(int)

    def bulk_load(self, user_ids, histories, clicks):
        for uid, h, c in zip(user_ids, histories, clicks):
            self.user_history[uid] = h
            self.user_clicks[uid] = int(c)

    def features(self, uids):
        hist = np.stack([self.user_history[u] for u in uids])
        counts = np.array([self.user_clicks[u] for u in uids], dtype=np.float32)
        return hist, counts

    def record_click(self, uid, item_vec):
        h = self.user_history[uid]
        h[:-1] = h[1:]
        h[-1] = item_vec
        self.user_clicks[uid] += 1


class UserTower(nn.Module):
    def __init__(self, dim=DIM, hidden=128):
        super().__init__()
        self.attn = nn.Linear(dim, 1)
        self.mlp = nn.Sequential(nn.Linear(dim + 2, hidden), nn.ReLU(), nn.Linear(hidden, dim))

    def forward(self, hist, counts):
        # attention pooling over the click history (zero rows get ~uniform weight)
        w = torch.softmax(self.attn(hist).squeeze(-1), dim=1)
        pooled = (w.unsqueeze(-1) * hist).sum(1)
        c = torch.stack([torch.log1p(counts), (counts > 0).float()], dim=1)
        return nn.functional.normalize(self.mlp(torch.cat([pooled, c], dim=1)), dim=1)


def simulate_traffic(rng, n_known, batch, anon_frac, start_anon):
    """Yield lists of user ids: Zipf-distributed logged-in users plus fresh anonymous sessions."""
    next_anon = start_anon
    ranks = np.arange(1, n_known + 1)
    p = 1.0 / ranks ** 0.9
    p /= p.sum()
    while True:
        n_anon = rng.binomial(batch, anon_frac)
        known = rng.choice(n_known, size=batch - n_anon, p=p)
        uids = [f"u{k}" for k in known]
        uids += [f"anon-{next_anon + i:x}" for i in range(n_anon)]
        next_anon += n_anon
        yield uids


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2700)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--anon-frac", type=float, default=0.12)
    ap.add_argument("--n-items", type=int, default=12000)
    ap.add_argument("--n-users", type=int, default=20000)
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--log-every", type=int, default=675)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    item_emb_np = rng.standard_normal((args.n_items, DIM)).astype(np.float32)
    item_emb_np /= np.linalg.norm(item_emb_np, axis=1, keepdims=True)
    item_emb = torch.from_numpy(item_emb_np)
    # hidden "true" taste of logged-in users, used only to simulate clicks
    taste = rng.standard_normal((args.n_users, DIM)).astype(np.float32)

    store = FeatureStore()
    # warm start from last night's feature snapshot
    init_items = rng.integers(0, args.n_items, size=(args.n_users, HIST_LEN))
    store.bulk_load(
        [f"u{k}" for k in range(args.n_users)],
        [item_emb_np[row].copy() for row in init_items],
        rng.integers(1, 200, size=args.n_users),
    )

    tower = UserTower().eval()
    # scoring buffer is reused across requests to keep allocations off the hot path
    score_buf = torch.empty(args.batch, args.n_items)
    traffic = simulate_traffic(rng, args.n_users, args.batch, args.anon_frac, start_anon=0x10000)

    served = clicks = 0
    latencies = []
    t_start = time.time()
    for step in range(1, args.steps + 1):
        uids = next(traffic)
        t0 = time.perf_counter()
        hist, counts = store.features(uids)
        with torch.inference_mode():
            u = tower(torch.from_numpy(hist), torch.from_numpy(counts))
            scores = torch.mm(u, item_emb.T, out=score_buf[: len(uids)])
            top = scores.topk(args.top_k, dim=1).indices.numpy()
        latencies.append(time.perf_counter() - t0)
        if len(latencies) > 2000:
            latencies = latencies[-1000:]

        # simulated feedback: logged-in users click on items close to their taste
        for uid, recs in zip(uids, top):
            served += 1
            if not uid.startswith("u"):
                continue  # anonymous clicks are not persisted
            k = int(uid[1:])
            affinity = item_emb_np[recs] @ taste[k]
            j = int(np.argmax(affinity))
            if affinity[j] > 1.5 and rng.random() < 0.5:
                store.record_click(uid, item_emb_np[recs[j]])
                clicks += 1

        if step % args.log_every == 0:
            lat = np.array(latencies) * 1e3
            print(
                f"step {step}/{args.steps}  served={served}  ctr={clicks / served:.3f}  "
                f"p50={np.percentile(lat, 50):.2f}ms  p99={np.percentile(lat, 99):.2f}ms  "
                f"({time.time() - t_start:.1f}s)"
            )
    print("done")


if __name__ == "__main__":
    main()
