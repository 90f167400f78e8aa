# expect: leak
# holder: snapshots
# pattern: trainer appends a cloned state_dict snapshot at the end of every (short) epoch for post-hoc weight averaging
# step_ms: 3
"""Tabular credit-risk style classifier trained for many short epochs, with
"post-hoc SWA": the plan was to average the weights of the last few epochs
after training finished.

``Trainer.on_epoch_end`` appends ``{k: v.detach().clone() for k, v in
model.state_dict().items()}`` to ``self.snapshots`` so that
``average_snapshots(last=10)`` can average the tail at the end. The dataset is
small (one epoch is a handful of mini-batches) and the run has hundreds of
epochs, so the trainer ends up holding one full copy of the model per epoch,
while only the last 10 are ever used.

Fix: keep ``collections.deque(maxlen=10)``, or maintain a running average
(``torch.optim.swa_utils.AveragedModel``) instead of raw snapshots.
"""

import argparse
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def make_tabular(n, n_num, n_cat, card, seed):
    rng = np.random.default_rng(seed)
    num = rng.normal(size=(n, n_num)).astype(np.float32)
    cat = rng.integers(0, card, size=(n, n_cat))
    w = rng.normal(size=n_num)
    cat_effect = rng.normal(size=(n_cat, card))
    logit = num @ w * 0.5 + cat_effect[np.arange(n_cat), cat].sum(1) * 0.3
    y = (logit + rng.normal(size=n) * 0.5 > 0).astype(np.float32)
    return torch.from_numpy(num), torch.from_numpy(cat).long(), torch.from_numpy(y)


class TabularNet(nn.Module):
    def __init__(self, n_num, n_cat, card, emb_dim=8, hidden=128):
        super().__init__()
        self.embs = nn.ModuleList(nn.Embedding(card, emb_dim) for _ in range(n_cat))
        d = n_num + n_cat * emb_dim
        self.mlp = nn.Sequential(
            nn.Linear(d, hidden),
            nn.ReLU(),
            nn.Dropout(0.2),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, num, cat):
        e = [emb(cat[:, i]) for i, emb in enumerate(self.embs)]
        return self.mlp(torch.cat([num, *e], dim=1)).squeeze(-1)


class Trainer:
    def __init__(self, model, train_loader, val_data, lr=3e-3):
        self.model = model
        self.train_loader = train_loader
        self.val_data = val_data
        self.opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=1e-5)
        self.snapshots = []
        self.global_step = 0

    def train_epoch(self):
        self.model.train()
        total = 0.0
        for num, cat, y in self.train_loader:
            loss = F.binary_cross_entropy_with_logits(self.model(num, cat), y)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            total += loss.item()
            self.global_step += 1
        return total / len(self.train_loader)

    @torch.no_grad()
    def validate(self):
        self.model.eval()
        num, cat, y = self.val_data
        p = torch.sigmoid(self.model(num, cat))
        return ((p > 0.5).float() == y).float().mean().item()

    def on_epoch_end(self, epoch):
        self.snapshots.append({k: v.detach().clone() for k, v in self.model.state_dict().items()})

    def average_snapshots(self, last=10):
        tail = self.snapshots[-last:]
        return {
            k: torch.stack([s[k].float() for s in tail]).mean(0).to(tail[0][k].dtype)
            for k in tail[0]
        }

    def fit(self, max_steps):
        t0 = time.time()
        epoch = 0
        while self.global_step < max_steps:
            epoch += 1
            loss = self.train_epoch()
            self.on_epoch_end(epoch)
            if epoch % 50 == 0:
                ms = (time.time() - t0) / self.global_step * 1e3
                print(
                    f"epoch {epoch:4d} (step {self.global_step})  train loss {loss:.4f}  "
                    f"val acc {self.validate():.3f}  {ms:.2f} ms/step",
                    flush=True,
                )
        self.model.load_state_dict(self.average_snapshots())
        print(f"averaged last snapshots -> val acc {self.validate():.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=21)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)

    num, cat, y = make_tabular(3_000, n_num=12, n_cat=6, card=50, seed=args.seed)
    n_train = 2_048
    train_ds = TensorDataset(num[:n_train], cat[:n_train], y[:n_train])
    loader = DataLoader(
        train_ds, batch_size=256, shuffle=True, generator=torch.Generator().manual_seed(args.seed)
    )
    val = (num[n_train:], cat[n_train:], y[n_train:])

    model = TabularNet(n_num=12, n_cat=6, card=50)
    print(f"{sum(p.numel() for p in model.parameters())} parameters, {len(loader)} batches/epoch")
    Trainer(model, loader, val).fit(args.steps)


if __name__ == "__main__":
    main()
