# expect: leak
# holder: opt.state|optimizer.state|Adam.state
# pattern: online click-through-rate learner for a marketplace whose item catalogue keeps growing (user table fixed, item table is a GrowableEmbedding, MLP head, torch.optim.Adam, one update per 512-event micro-batch, ~5 ms per step, code in main() + an OnlineLearner class); when new item ids pass the table size, grow_item_table() builds a bigger nn.Parameter, swaps it into opt.param_groups and migrates the Adam moments (padded) to the new parameter, but never deletes opt.state[old_param]; the optimizer's state dict keeps every retired table (as the key) plus its exp_avg / exp_avg_sq, so memory climbs with every growth for the whole run
# step_ms: 5
"""Online CTR learner for the marketplace ranking service.

Events arrive in micro-batches of (user, item, dense context features, click).
New listings are published continuously, so the item embedding table is grown
in chunks whenever the stream references an id past the end of the table.
The Adam moments of the existing rows are carried over to the grown table so
that the learning-rate adaptation of popular items is not reset.
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


class CTRModel(nn.Module):
    def __init__(self, n_items):
        super().__init__()
        self.user_emb = nn.Embedding(N_USERS, DIM)
        self.item_weight = nn.Parameter(torch.randn(n_items, DIM) * 0.05)
        self.head = nn.Sequential(
            nn.Linear(2 * DIM + DENSE + DIM, 64), nn.ReLU(),
            nn.Linear(64, 32), nn.ReLU(),
            nn.Linear(32, 1),
        )

    @property
    def n_items(self):
        return self.item_weight.shape[0]

    def forward(self, users, items, dense):
        u = self.user_emb(users)
        v = F.embedding(items, self.item_weight)
        x = torch.cat([u, v, dense, u * v], dim=1)
        return self.head(x).squeeze(1)


class OnlineLearner:
    def __init__(self, n_items, lr=2e-3):
        self.model = CTRModel(n_items)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.seen = 0
        self.grows = 0

    def grow_item_table(self, needed_rows):
        old = self.model.item_weight
        new_rows = old.shape[0]
        while new_rows < needed_rows:
            new_rows += GROW_CHUNK
        with torch.no_grad():
            data = torch.empty(new_rows, DIM)
            data[: old.shape[0]] = old
            data[old.shape[0]:].normal_(0.0, 0.05)
        new = nn.Parameter(data)
        # swap the parameter inside the optimizer so that the param group keeps its lr
        for group in self.opt.param_groups:
            for i, p in enumerate(group["params"]):
                if p is old:
                    group["params"][i] = new
        # carry the Adam moments of the existing rows over to the grown table
        st = self.opt.state.get(old)
        if st:
            pad = new_rows - old.shape[0]
            self.opt.state[new] = {
                "step": st["step"].clone(),
                "exp_avg": F.pad(st["exp_avg"], (0, 0, 0, pad)),
                "exp_avg_sq": F.pad(st["exp_avg_sq"], (0, 0, 0, pad)),
            }
        self.model.item_weight = new
        self.grows += 1

    def update(self, users, items, dense, clicks):
        top = int(items.max()) + 1
        if top > self.model.n_items:
            self.grow_item_table(top)
        logits = self.model(users, items, dense)
        loss = F.binary_cross_entropy_with_logits(logits, clicks)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.seen += len(clicks)
        return loss.item()


class EventStream:
    """Synthetic marketplace traffic: new listings are launched every tick and
    attract most of the clicks while they are fresh."""

    def __init__(self, start_items, launches_per_tick, batch, seed=0):
        self.rng = np.random.default_rng(seed)
        self.n_items = start_items
        self.launches = launches_per_tick
        self.batch = batch
        self.user_taste = self.rng.normal(size=(N_USERS, 4)).astype(np.float32)

    def next_batch(self):
        self.n_items += self.rng.poisson(self.launches)
        b = self.batch
        users = self.rng.integers(0, N_USERS, size=b)
        age = self.rng.exponential(scale=1500.0, size=b).astype(np.int64)
        items = np.clip(self.n_items - 1 - age, 0, self.n_items - 1)
        dense = self.rng.normal(size=(b, DENSE)).astype(np.float32)
        score = (self.user_taste[users, 0] * np.sin(items * 0.01) + dense[:, 0]
                 - 0.3 * dense[:, 3] - 1.0)
        clicks = (self.rng.random(b) < 1.0 / (1.0 + np.exp(-score))).astype(np.float32)
        return (torch.from_numpy(users), torch.from_numpy(items), torch.from_numpy(dense),
                torch.from_numpy(clicks))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3300)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--launches", type=float, default=22.0)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)

    stream = EventStream(start_items=8192, launches_per_tick=args.launches, batch=args.batch)
    learner = OnlineLearner(n_items=8192)
    ema = None
    t0 = time.time()
    for step in range(1, args.steps + 1):
        users, items, dense, clicks = stream.next_batch()
        loss = learner.update(users, items, dense, clicks)
        ema = loss if ema is None else 0.98 * ema + 0.02 * loss
        if step % 500 == 0:
            print(f"step {step:5d}  logloss {ema:.4f}  items {learner.model.n_items}  "
                  f"grows {learner.grows}  {time.time() - t0:.1f}s", flush=True)
    print(f"done: {learner.seen} events, final table {learner.model.n_items} rows")


if __name__ == "__main__":
    main()
