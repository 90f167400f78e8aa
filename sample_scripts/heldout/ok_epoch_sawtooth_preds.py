# expect: no_leak
# pattern: per-epoch sawtooth: detached preds/embeddings kept for an epoch, then dropped
# step_ms: 1.3
"""Ordinal regression ("rate this wine 0-9") with epoch-level metrics: the
training loop collects detached predictions, targets and penultimate-layer
embeddings for the whole epoch, computes the Spearman correlation and a
linear-probe "feature rank" at the end of the epoch, and starts new lists for
the next one.

Memory: a sawtooth. The lists grow during an epoch (200 steps, ~26 MB of
embeddings) and are released at the epoch boundary; the floor stays flat.
"""

import argparse

import torch
import torch.nn as nn


def spearman(a, b):
    ra = a.argsort().argsort().float()
    rb = b.argsort().argsort().float()
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return (ra * rb).sum() / (ra.norm() * rb.norm() + 1e-8)


def make_wines(n, gen):
    X = torch.randn(n, 24, generator=gen)
    score = X[:, :6].sum(1) * 0.8 + X[:, 6:9].prod(1) + 0.5 * torch.randn(n, generator=gen)
    y = torch.bucketize(score, torch.linspace(-5, 5, 9)).float()
    return X, y


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.opt = torch.optim.RMSprop(model.parameters(), lr=lr)

    def run_epoch(self, X, y, batch, gen):
        preds, targets, embs = [], [], []
        perm = torch.randperm(len(X), generator=gen)
        for i in range(0, len(X), batch):
            idx = perm[i : i + batch]
            emb = self.model.body(X[idx])
            out = self.model.head(emb).squeeze(1)
            loss = nn.functional.huber_loss(out, y[idx])
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            preds.append(out.detach())
            targets.append(y[idx])
            embs.append(emb.detach())
        E = torch.cat(embs)
        svals = torch.linalg.svdvals(E[:: max(1, len(E) // 2048)])
        eff_rank = float((svals.sum() ** 2) / (svals**2).sum())
        return spearman(torch.cat(preds), torch.cat(targets)).item(), loss.item(), eff_rank


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--n", type=int, default=25_600)
    ap.add_argument("--batch", type=int, default=128)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(1)
    gen = torch.Generator().manual_seed(1)
    X, y = make_wines(args.n, gen)
    model = nn.Module()
    model.body = nn.Sequential(nn.Linear(24, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU())
    model.head = nn.Linear(256, 1)
    trainer = Trainer(model, 1e-3)
    for epoch in range(args.epochs):
        rho, last, rank = trainer.run_epoch(X, y, args.batch, gen)
        print(
            f"epoch {epoch:3d}  spearman {rho:.3f}  last loss {last:.3f}  feature rank {rank:.1f}"
        )


if __name__ == "__main__":
    main()
