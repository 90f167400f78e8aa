# expect: no_leak
# pattern: two-tower retrieval recommender with embedding tables (200k-item and 60k-user nn.Embedding(sparse=True) tables with torch.optim.SparseAdam, torch.optim.Adam for the user MLP, ~150 ms steps, code in main()); each step scores the batch against a freshly drawn negative pool whose size varies 4k-80k items (popularity + uniform mixture), so the B x N logits, softmax and their gradients are large temporaries of a different size every step (and every 30 steps a chunked full-catalogue recall@200 evaluation allocates yet other sizes); everything is freed at the end of the step and only floats are logged, so RSS jumps around with the allocator (heap growth, mmap'd blocks returned, dynamic mmap threshold) during the first steps (step 1 deliberately uses the largest pool) and then stays within a fixed band
# step_ms: 150
"""Two-tower candidate retrieval with sampled-softmax training.

Synthetic implicit-feedback data: users and items live in a small number of
taste clusters; a user's next click is drawn from their favourite clusters.
User tower = user-id embedding + mean of the last clicked item embeddings;
item tower = item-id embedding + category embedding (no MLP, so large
negative pools stay cheap).  Sampled softmax with a
mixed popularity/uniform negative pool and logQ correction.
"""
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

N_USERS = 60_000
N_ITEMS = 200_000
N_CATS = 300
N_CLUSTERS = 64
DIM = 64
HIST = 20
BATCH = 128
STEPS = 120
MAX_NEG = 80_000


class Towers(nn.Module):
    def __init__(self):
        super().__init__()
        self.user_emb = nn.Embedding(N_USERS, DIM, sparse=True)
        self.item_emb = nn.Embedding(N_ITEMS, DIM, sparse=True)
        self.cat_emb = nn.Embedding(N_CATS, DIM, sparse=True)
        self.user_mlp = nn.Sequential(nn.Linear(2 * DIM, 256), nn.ReLU(), nn.Linear(256, DIM))
        for e in (self.user_emb, self.item_emb, self.cat_emb):
            nn.init.normal_(e.weight, std=0.05)

    def users(self, uid, hist):
        h = self.item_emb(hist).mean(1)
        return F.normalize(self.user_mlp(torch.cat([self.user_emb(uid), h], 1)), dim=-1)

    def items(self, iid, item_cat):
        return F.normalize(self.item_emb(iid) + self.cat_emb(item_cat[iid]), dim=-1)


def make_world(rng):
    item_cluster = rng.integers(0, N_CLUSTERS, N_ITEMS)
    item_cat = (item_cluster * 5 + rng.integers(0, 5, N_ITEMS)) % N_CATS
    popularity = rng.zipf(1.2, N_ITEMS).astype(np.float64)
    popularity = np.minimum(popularity, 1e4)
    popularity /= popularity.sum()
    order = np.argsort(item_cluster, kind="stable")
    counts = np.bincount(item_cluster, minlength=N_CLUSTERS)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    user_pref = rng.dirichlet(np.full(N_CLUSTERS, 0.08), N_USERS)
    user_cdf = np.cumsum(user_pref, axis=1)
    return item_cat, popularity, (order, starts, counts), user_cdf


def draw_clicks(rng, users, n, clusters, user_cdf):
    order, starts, counts = clusters
    cdf = user_cdf[users]
    r = rng.random((len(users), n, 1)) * cdf[:, -1][:, None, None]
    cl = np.minimum((r > cdf[:, None, :]).sum(-1), N_CLUSTERS - 1)
    # within a cluster, items with a lower index (older, better known) are clicked more
    within = (rng.random(cl.shape) ** 3 * counts[cl]).astype(np.int64)
    return order[starts[cl] + within]


def recall_at_k(model, item_cat_t, eval_users, eval_hist, eval_target, k=200, chunk=25_000):
    with torch.no_grad():
        u = model.users(eval_users, eval_hist)
        best_s = torch.full((len(u), k), -1e9)
        best_i = torch.zeros((len(u), k), dtype=torch.long)
        for start in range(0, N_ITEMS, chunk):
            iid = torch.arange(start, min(start + chunk, N_ITEMS))
            s = u @ model.items(iid, item_cat_t).T
            s_all = torch.cat([best_s, s], 1)
            i_all = torch.cat([best_i, iid.expand(len(u), -1)], 1)
            best_s, pos = s_all.topk(k, dim=1)
            best_i = i_all.gather(1, pos)
        hit = (best_i == eval_target[:, None]).any(1).float().mean().item()
        same_cat = (item_cat_t[best_i] == item_cat_t[eval_target][:, None]).float().mean().item()
        return hit, same_cat


def main():
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    t0 = time.time()
    item_cat, popularity, clusters, user_cdf = make_world(rng)
    item_cat_t = torch.from_numpy(item_cat)
    log_pop = torch.from_numpy(np.log(popularity)).float()
    pop_cdf = np.cumsum(popularity)

    eval_u = rng.integers(0, N_USERS, 400)
    eval_clicks = draw_clicks(rng, eval_u, HIST + 1, clusters, user_cdf)
    eval_users = torch.from_numpy(eval_u)
    eval_hist = torch.from_numpy(eval_clicks[:, :HIST])
    eval_target = torch.from_numpy(eval_clicks[:, HIST])
    print(f"world built in {time.time() - t0:.1f}s: {N_USERS:,} users, {N_ITEMS:,} items")

    model = Towers()
    tables = [model.user_emb.weight, model.item_emb.weight, model.cat_emb.weight]
    opt_tables = torch.optim.SparseAdam(tables, lr=3e-3)
    opt = torch.optim.Adam(model.user_mlp.parameters(), lr=1e-3)
    temperature = 0.07
    t_train = time.time()
    for step in range(1, STEPS + 1):
        users = rng.integers(0, N_USERS, BATCH)
        clicks = draw_clicks(rng, users, HIST + 1, clusters, user_cdf)
        uid = torch.from_numpy(users)
        hist = torch.from_numpy(clicks[:, :HIST])
        pos = torch.from_numpy(clicks[:, HIST])

        # step 1 uses the largest pool so an out-of-memory shows up right away
        n_neg = MAX_NEG if step == 1 else int(rng.integers(4_000, MAX_NEG))
        n_pop = n_neg // 2
        neg_pop = np.searchsorted(pop_cdf, rng.random(n_pop) * pop_cdf[-1])
        neg_uni = rng.integers(0, N_ITEMS, n_neg - n_pop)
        neg = torch.from_numpy(np.minimum(np.concatenate([neg_pop, neg_uni]), N_ITEMS - 1))
        # sampling probability of each negative under the mixture, for the logQ correction
        logq = torch.log(0.5 * log_pop[neg].exp() + 0.5 / N_ITEMS) + math.log(n_neg)

        u = model.users(uid, hist)
        v_pos = model.items(pos, item_cat_t)
        v_neg = model.items(neg, item_cat_t)
        pos_logit = (u * v_pos).sum(-1, keepdim=True) / temperature
        neg_logits = u @ v_neg.T / temperature - logq[None, :]
        logits = torch.cat([pos_logit, neg_logits], 1)
        loss = F.cross_entropy(logits, torch.zeros(BATCH, dtype=torch.long))

        opt.zero_grad(set_to_none=True)
        opt_tables.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        opt_tables.step()

        if step % 10 == 0:
            el = time.time() - t_train
            msg = (f"step {step:4d}  negatives {n_neg:6d}  loss {loss.item():.3f}  "
                   f"{1000 * el / step:.0f} ms/step")
            if step % 30 == 0:
                hit, same_cat = recall_at_k(model, item_cat_t, eval_users, eval_hist, eval_target)
                msg += f"  recall@200 {hit:.3f}  same-category@200 {same_cat:.3f}"
            print(msg, flush=True)
    print(f"done: {STEPS} steps in {time.time() - t_train:.1f}s")


if __name__ == "__main__":
    main()
