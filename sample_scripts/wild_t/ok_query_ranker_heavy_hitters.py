# expect: no_leak
# pattern: online-learning search ranking service loop written as plain functions passing a state dict (hashed-feature ranking MLP updated every micro-batch with torch.optim.Adagrad, ~8.5 ms per batch); a "trending queries" feature comes from a Space-Saving heavy-hitters sketch (state["trending"]: dict query -> [count, err, 96-d float32 EMA of the clicked items' embeddings, ring of the last 128 clicked item ids, 24-bin hourly histogram], ~1.8 KB per entry, plus a lazily-invalidated min-heap that is rebuilt whenever it holds more than 2x capacity stale entries); the query stream is Zipfian with a never-ending tail of one-off queries (order numbers, typos), so the dict grows until it reaches capacity=24000 (~45-50% of the run) and from then on each new query evicts the minimum-count entry: memory climbs, then stays flat
# step_ms: 8.5
"""Online learning-to-rank service with a trending-queries signal.

Simulated search traffic: each request has a query, a user segment and a
slate of 12 candidate items; clicks follow a hidden relevance model.  The
ranker is updated online from every micro-batch of logged clicks.  Query
popularity is tracked with the Space-Saving algorithm (Metwally et al.), which
keeps at most `capacity` counters no matter how many distinct queries appear.
"""
import heapq
import time

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)

N_HEAD_QUERIES = 20_000
N_ITEMS = 50_000
EMB = 96
SLATE = 12
BATCH = 48
HASH = 2 ** 16
CAPACITY = 24_000
RECENT = 128
RUN_SECONDS = 17.0


def make_world(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "rng": rng,
        "item_vec": (rng.normal(0, 1, (N_ITEMS, EMB)) / np.sqrt(EMB)).astype(np.float32),
        "query_vec": (rng.normal(0, 1, (N_HEAD_QUERIES, EMB)) / np.sqrt(EMB)).astype(np.float32),
        "zipf_p": (lambda w: w / w.sum())(1.0 / np.arange(1, N_HEAD_QUERIES + 1) ** 1.05),
        "tail_counter": 0,
    }


def next_requests(world, n):
    rng = world["rng"]
    head = rng.random(n) < 0.5
    reqs = []
    q_ids = rng.choice(N_HEAD_QUERIES, size=n, p=world["zipf_p"])
    for i in range(n):
        if head[i]:
            qid = int(q_ids[i])
            text, qvec = f"q{qid}", world["query_vec"][qid]
        else:
            world["tail_counter"] += 1
            text = f"order status {rng.integers(10**7, 10**8)}-{world['tail_counter']}"
            qvec = world["query_vec"][int(q_ids[i])] * 0.3
        slate = rng.integers(0, N_ITEMS, SLATE)
        rel = world["item_vec"][slate] @ qvec * 6.0
        p_click = 1 / (1 + np.exp(-(rel - 1.5 + 0.8 / (1 + np.arange(SLATE)))))
        clicks = (rng.random(SLATE) < p_click).astype(np.float32)
        reqs.append((text, qvec, slate, clicks))
    return reqs


def init_trending(capacity):
    return {"capacity": capacity, "table": {}, "heap": [], "evictions": 0}


def trending_observe(tr, query, clicked_vec, clicked_items, hour):
    table = tr["table"]
    entry = table.get(query)
    if entry is None:
        if len(table) < tr["capacity"]:
            entry = [0, 0, np.zeros(EMB, np.float32), np.full(RECENT, -1, np.int32), np.zeros(24)]
        else:
            while True:
                cnt, old = heapq.heappop(tr["heap"])
                victim = table.get(old)
                if victim is not None and victim[0] == cnt:
                    break
            del table[old]
            tr["evictions"] += 1
            entry = [cnt, cnt] + victim[2:]
            entry[2][:] = 0.0
            entry[3][:] = -1
            entry[4][:] = 0.0
        table[query] = entry
    entry[0] += 1
    entry[4][hour] += 1.0
    if len(clicked_items):
        entry[3] = np.roll(entry[3], len(clicked_items))
        entry[3][:len(clicked_items)] = clicked_items[:RECENT]
    if clicked_vec is not None:
        entry[2] *= 0.9
        entry[2] += 0.1 * clicked_vec
    heapq.heappush(tr["heap"], (entry[0], query))
    if len(tr["heap"]) > 2 * tr["capacity"]:
        tr["heap"] = [(e[0], q) for q, e in table.items()]
        heapq.heapify(tr["heap"])


def trending_features(tr, query):
    entry = tr["table"].get(query)
    if entry is None:
        return 0.0, np.zeros(EMB, np.float32)
    return np.log1p(entry[0] - entry[1]), entry[2]


class Ranker(nn.Module):
    def __init__(self):
        super().__init__()
        self.item_emb = nn.EmbeddingBag(HASH, 32, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(2 * EMB + 32 + 2, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, qv, tv, pop, item_h, pos):
        e = self.item_emb(item_h.view(-1, 1)).view(item_h.shape[0], item_h.shape[1], -1)
        B, S = item_h.shape
        x = torch.cat([qv[:, None].expand(B, S, EMB), tv[:, None].expand(B, S, EMB), e,
                       pop[:, None, None].expand(B, S, 1), pos.expand(B, S, 1)], -1)
        return self.mlp(x).squeeze(-1)


def init_service():
    model = Ranker()
    return {"model": model, "opt": torch.optim.Adagrad(model.parameters(), lr=0.05),
            "trending": init_trending(CAPACITY), "loss_ema": None, "ndcg_ema": None, "requests": 0,
            "pos": (1.0 / torch.log2(torch.arange(SLATE, dtype=torch.float32) + 2))[None, :, None]}


def ndcg_at_k(scores, clicks, k=5):
    order = torch.argsort(scores, dim=1, descending=True)[:, :k]
    gains = torch.gather(clicks, 1, order)
    disc = 1.0 / torch.log2(torch.arange(k, dtype=torch.float32) + 2)
    dcg = (gains * disc).sum(1)
    ideal = (torch.sort(clicks, 1, descending=True).values[:, :k] * disc).sum(1)
    return (dcg / ideal.clamp(min=1e-6))[ideal > 0].mean().item() if (ideal > 0).any() else 0.0


def handle_batch(state, world, reqs):
    tr = state["trending"]
    pops, tvecs = zip(*(trending_features(tr, q) for q, _, _, _ in reqs))
    qv = torch.from_numpy(np.stack([r[1] for r in reqs]))
    tv = torch.from_numpy(np.stack(tvecs))
    pop = torch.tensor(pops, dtype=torch.float32)
    item_h = torch.from_numpy(np.stack([r[2] % HASH for r in reqs]))
    clicks = torch.from_numpy(np.stack([r[3] for r in reqs]))
    scores = state["model"](qv, tv, pop, item_h, state["pos"])
    loss = nn.functional.binary_cross_entropy_with_logits(scores, clicks)
    state["opt"].zero_grad()
    loss.backward()
    state["opt"].step()
    hour = (state["requests"] // 5000) % 24
    for (text, _, slate, cl) in reqs:
        idx = np.flatnonzero(cl)
        trending_observe(tr, text, world["item_vec"][slate[idx]].mean(0) if len(idx) else None,
                         slate[idx], hour)
    nd = ndcg_at_k(scores.detach(), clicks)
    for key, val in (("loss_ema", loss.item()), ("ndcg_ema", nd)):
        state[key] = val if state[key] is None else 0.98 * state[key] + 0.02 * val
    state["requests"] += len(reqs)


if __name__ == "__main__":
    world = make_world()
    state = init_service()
    t0 = time.time()
    batches = 0
    while time.time() - t0 < RUN_SECONDS:
        handle_batch(state, world, next_requests(world, BATCH))
        batches += 1
        if batches % 300 == 0:
            tr = state["trending"]
            el = time.time() - t0
            print(f"{el:5.1f}s  requests {state['requests']:7d}  loss {state['loss_ema']:.4f}  "
                  f"ndcg@5 {state['ndcg_ema']:.3f}  trending {len(tr['table']):6d} "
                  f"(heap {len(tr['heap']):6d}, evicted {tr['evictions']:6d})  {1000 * el / batches:.1f} ms/batch")
    top = sorted(state["trending"]["table"].items(), key=lambda kv: -kv[1][0])[:5]
    print("top queries:", ", ".join(f"{q} ({e[0]})" for q, e in top))
    print(f"served {state['requests']} requests in {time.time() - t0:.1f}s")
