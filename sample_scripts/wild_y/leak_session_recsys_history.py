# expect: leak
# holder: sessions|make_session_store|record_click
# pattern: GRU4Rec-style next-item recommender trained online on a simulated click stream (item embeddings + per-click context features -> GRU -> in-batch softmax, torch.optim.Adam, ~25 ms per step of 256 clicks, code in main() + a closure-based session store + a module-level model class). make_session_store(max_users=4096) returns two closures, record_click() and recent(); their shared `sessions` OrderedDict is an LRU bounded by the number of users (move_to_end on access, popitem(last=False) past max_users), which makes the store look bounded. But each user's entry is a plain list of click dicts (item id, step, hour, device, dwell time, price level, the 10-item slate that was shown) that record_click() appends to forever; the model only ever reads the last 20 clicks through recent() (`hist[-n:]`), and the ~3,000 simulated users never exceed the LRU cap, so nothing is ever trimmed: the closure cell `sessions` grows by 256 click dicts (~200 KB) per step for the whole run.
# step_ms: 25
"""Online GRU4Rec-style next-item model on a simulated click stream."""
import time
from collections import OrderedDict

import numpy as np
import psutil
import torch
import torch.nn as nn
import torch.nn.functional as F

N_ITEMS, N_USERS, CTX_DIM, MAX_LEN = 6000, 3000, 16, 20


def rss_mb():
    return psutil.Process().memory_info().rss / 2**20


def make_session_store(max_users=4096):
    """Per-user click history, LRU-bounded by user count."""
    sessions = OrderedDict()

    def record_click(user, click):
        hist = sessions.get(user)
        if hist is None:
            hist = sessions[user] = []
            if len(sessions) > max_users:
                sessions.popitem(last=False)
        else:
            sessions.move_to_end(user)
        hist.append(click)

    def recent(user, n=MAX_LEN):
        hist = sessions.get(user)
        return hist[-n:] if hist else []

    return record_click, recent


class ClickSimulator:
    def __init__(self, seed=0, dim=12):
        self.rng = np.random.default_rng(seed)
        self.user_f = self.rng.normal(size=(N_USERS, dim)).astype(np.float32)
        self.item_f = self.rng.normal(size=(N_ITEMS, dim)).astype(np.float32)
        pop = 1.0 / np.arange(1, N_ITEMS + 1) ** 0.8
        self.item_p = pop / pop.sum()
        act = 1.0 / np.arange(1, N_USERS + 1) ** 0.6
        self.user_p = act / act.sum()
        self.hour = 0

    def batch(self, n):
        self.hour = (self.hour + 1) % 24
        users = self.rng.choice(N_USERS, size=n, p=self.user_p)
        cand = self.rng.choice(N_ITEMS, size=(n, 48), p=self.item_p)
        logits = np.einsum("nd,nkd->nk", self.user_f[users], self.item_f[cand]) / 1.5
        probs = np.exp(logits - logits.max(1, keepdims=True))
        probs /= probs.sum(1, keepdims=True)
        pick = (probs.cumsum(1) > self.rng.random((n, 1))).argmax(1)
        items = cand[np.arange(n), pick]
        device = self.rng.integers(4, size=n)
        dwell = self.rng.gamma(2.0, 8.0, size=n)
        price = self.rng.integers(5, size=n)
        slates = [tuple(row) for row in cand[:, :10].tolist()]       # what the user was shown
        ctx = [{"hour": self.hour, "device": d, "dwell": w, "price": p, "slate": sl}
               for d, w, p, sl in zip(device.tolist(), dwell.round(1).tolist(), price.tolist(), slates)]
        return users, items, ctx


class GRU4Rec(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.item_emb = nn.Embedding(N_ITEMS + 1, dim, padding_idx=0)
        self.ctx_proj = nn.Linear(CTX_DIM, dim)
        self.gru = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, dim)

    def user_vec(self, items, ctx, lengths):
        x = self.item_emb(items) + self.ctx_proj(ctx)
        h, _ = self.gru(x)
        last = h[torch.arange(len(lengths)), (lengths - 1).clamp(min=0)]
        return self.out(last) * (lengths > 0).float()[:, None]

    def forward(self, items, ctx, lengths, targets):
        u = F.normalize(self.user_vec(items, ctx, lengths), dim=-1)
        t = F.normalize(self.item_emb(targets), dim=-1)
        return u @ t.T / 0.1


def ctx_features(click):
    hour, device, dwell, price = click["hour"], click["device"], click["dwell"], click["price"]
    f = np.zeros(CTX_DIM, dtype=np.float32)
    f[hour % 8] = 1.0
    f[8 + device] = 1.0
    f[12] = np.log1p(dwell) / 4
    f[13 + min(price, 2)] = 1.0
    return f


def collate(users, recent):
    B = len(users)
    items = np.zeros((B, MAX_LEN), dtype=np.int64)
    ctx = np.zeros((B, MAX_LEN, CTX_DIM), dtype=np.float32)
    lengths = np.zeros(B, dtype=np.int64)
    for b, u in enumerate(users):
        clicks = recent(int(u))
        L = len(clicks)
        if L:
            items[b, :L] = [c["item"] + 1 for c in clicks]
            ctx[b, :L] = [ctx_features(c) for c in clicks]
        lengths[b] = L
    return torch.from_numpy(items), torch.from_numpy(ctx), torch.from_numpy(lengths)


def main():
    torch.set_num_threads(1)   # small model, latency-bound: one intra-op thread
    torch.manual_seed(0)
    np.random.seed(0)
    steps, batch_size = 560, 256
    sim = ClickSimulator(seed=0)
    record_click, recent = make_session_store(max_users=4096)
    model = GRU4Rec()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    losses, hits = [], []
    print(f"start: rss={rss_mb():.1f} MB")
    t0 = time.time()
    for step in range(1, steps + 1):
        users, items, ctx = sim.batch(batch_size)
        hist_items, hist_ctx, lengths = collate(users, recent)
        targets = torch.from_numpy(items + 1)
        logits = model(hist_items, hist_ctx, lengths, targets)
        labels = torch.arange(batch_size)
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        hits.append((logits.detach().topk(10, dim=1).indices == labels[:, None]).any(1).float().mean().item())
        for u, it, c in zip(users.tolist(), items.tolist(), ctx):
            record_click(u, dict(c, item=it, ts=step))
        if step % 56 == 0:
            print(f"step {step:4d}  loss={np.mean(losses[-56:]):.3f}  in-batch HR@10={np.mean(hits[-56:]):.3f}  "
                  f"{1000 * (time.time() - t0) / step:.1f} ms/step  rss={rss_mb():.1f} MB")
    print(f"end: rss={rss_mb():.1f} MB  wall={time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
