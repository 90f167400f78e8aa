# expect: no_leak
# holder:
# pattern: online conversion-rate learner for a classifieds site whose listing catalogue keeps growing (user table fixed, listing table grown in 2048-row chunks, MLP head, torch.optim.Adam, one update per 512-event micro-batch, ~2 ms per step, code in main() + an OnlineLearner class); looks suspicious because every growth builds a new nn.Parameter, swaps it into opt.param_groups and copies the padded Adam moments into opt.state, but the old parameter's entry is popped from opt.state, and the table stops growing at --max-rows (later listing ids share hashed overflow rows), so memory climbs while the table grows (~first 20% of the run) and is flat afterwards
# step_ms: 2
"""Online conversion-rate learner for the classifieds ranking service.

Listings get a dedicated embedding row as they appear; the table is grown in
chunks (moments of the existing rows are carried over so their adaptive
learning rates survive) until it reaches the configured capacity, after which
new listings are hashed onto shared overflow rows.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

N_USERS = 4096
DIM = 16
DENSE = 24
GROW_CHUNK = 2048


class ConvModel(nn.Module):
    def __init__(self, n_rows):
        super().__init__()
        self.user_emb = nn.Embedding(N_USERS, DIM)
        self.listing_weight = nn.Parameter(torch.randn(n_rows, DIM) * 0.05)
        self.head = nn.Sequential(
            nn.Linear(2 * DIM + DENSE + DIM, 64), nn.ReLU(),
            nn.Linear(64, 32), nn.ReLU(),
            nn.Linear(32, 1),
        )

    def forward(self, users, rows, dense):
        u = self.user_emb(users)
        v = F.embedding(rows, self.listing_weight)
        return self.head(torch.cat([u, v, dense, u * v], dim=1)).squeeze(1)


class OnlineLearner:
    def __init__(self, start_rows, max_rows, n_overflow=4096, lr=2e-3):
        self.max_rows = max_rows
        self.n_overflow = n_overflow
        self.model = ConvModel(start_rows)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.grows = 0

    @property
    def rows(self):
        return self.model.listing_weight.shape[0]

    def row_index(self, listing_ids):
        direct = self.max_rows - self.n_overflow
        hashed = direct + (listing_ids * 2654435761) % self.n_overflow
        return torch.where(listing_ids < direct, listing_ids, hashed)

    def grow(self, needed):
        old = self.model.listing_weight
        n_old = old.shape[0]
        n_new = min(self.max_rows, n_old + GROW_CHUNK * ((needed - n_old) // GROW_CHUNK + 1))
        with torch.no_grad():
            data = torch.empty(n_new, DIM)
            data[:n_old] = old
            data[n_old:].normal_(0.0, 0.05)
        new = nn.Parameter(data)
        for group in self.opt.param_groups:
            group["params"] = [new if p is old else p for p in group["params"]]
        st = self.opt.state.pop(old, None)  # retire the old table's moments with it
        if st:
            self.opt.state[new] = {
                "step": st["step"],
                "exp_avg": F.pad(st["exp_avg"], (0, 0, 0, n_new - n_old)),
                "exp_avg_sq": F.pad(st["exp_avg_sq"], (0, 0, 0, n_new - n_old)),
            }
        self.model.listing_weight = new
        self.grows += 1

    def update(self, users, listing_ids, dense, conv):
        rows = self.row_index(listing_ids)
        top = int(rows.max()) + 1
        if top > self.rows:
            self.grow(top)
        loss = F.binary_cross_entropy_with_logits(self.model(users, rows, dense), conv)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss.item()


def traffic(rng, n_listings, batch, taste):
    users = rng.integers(0, N_USERS, size=batch)
    age = rng.exponential(scale=1500.0, size=batch).astype(np.int64)
    listings = np.clip(n_listings - 1 - age, 0, n_listings - 1)
    dense = rng.normal(size=(batch, DENSE)).astype(np.float32)
    score = taste[users] * np.cos(listings * 0.013) + 0.8 * dense[:, 0] - 1.2
    conv = (rng.random(batch) < 1.0 / (1.0 + np.exp(-score))).astype(np.float32)
    return (torch.from_numpy(users), torch.from_numpy(listings), torch.from_numpy(dense),
            torch.from_numpy(conv))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=7500)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--max-rows", type=int, default=32768)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(1)
    taste = rng.normal(size=N_USERS).astype(np.float32)

    learner = OnlineLearner(start_rows=8192, max_rows=args.max_rows)
    n_listings = 8192
    ema = None
    t0 = time.time()
    for step in range(1, args.steps + 1):
        n_listings += rng.poisson(22.0)
        loss = learner.update(*traffic(rng, n_listings, args.batch, taste))
        ema = loss if ema is None else 0.98 * ema + 0.02 * loss
        if step % 500 == 0:
            print(f"step {step:5d}  logloss {ema:.4f}  listings {n_listings}  rows {learner.rows}  "
                  f"grows {learner.grows}  {time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
