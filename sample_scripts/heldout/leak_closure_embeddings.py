# expect: leak
# holder: seen|record_embeddings
# pattern: detached embedding tensors appended to a list captured by a closure
# step_ms: 1.3
"""Metric learning (triplet loss) on synthetic clusters, with an embedding logger.

``make_embedding_logger()`` returns a little callback that stashes each batch
of embeddings so that I can run a t-SNE / k-NN check "at the end". The list it
appends to lives in the closure's cell, so nothing in ``train()`` even mentions
it: every step adds a 128x32 float tensor (16 KiB) that is never released.

Fix: keep only the last N batches (``deque(maxlen=N)``) or sample a fixed
subset for the visualisation.
"""

import argparse
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_embedding_logger(every=1):
    seen = []
    calls = 0

    def record_embeddings(emb, labels):
        nonlocal calls
        calls += 1
        if calls % every == 0:
            seen.append((emb.detach().clone(), labels.clone()))
        return len(seen)

    def snapshot(last=512):
        if not seen:
            return None
        embs = torch.cat([e for e, _ in seen[-last:]])
        labs = torch.cat([lab for _, lab in seen[-last:]])
        return embs, labs

    return record_embeddings, snapshot


class Encoder(nn.Module):
    def __init__(self, d_in=48, d_emb=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, 128), nn.GELU(), nn.Linear(128, d_emb))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


def sample_triplets(centers, batch, noise, rng):
    n_cls, d = centers.shape
    a_lab = torch.randint(0, n_cls, (batch,))
    n_lab = (a_lab + torch.randint(1, n_cls, (batch,))) % n_cls
    anchor = centers[a_lab] + noise * torch.randn(batch, d)
    pos = centers[a_lab] + noise * torch.randn(batch, d)
    neg = centers[n_lab] + noise * torch.randn(batch, d)
    if rng.random() < 0.01:  # the odd mislabelled batch, like real data
        pos, neg = neg, pos
    return anchor, pos, neg, a_lab


def knn_accuracy(embs, labs, k=5):
    sims = embs @ embs.T
    sims.fill_diagonal_(-2)
    idx = sims.topk(k, dim=1).indices
    votes = labs[idx].mode(dim=1).values
    return (votes == labs).float().mean().item()


def train(args):
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    centers = torch.randn(args.classes, 48) * 2
    enc = Encoder()
    opt = torch.optim.Adam(enc.parameters(), lr=1e-3)
    record, snapshot = make_embedding_logger()

    start = time.time()
    for step in range(1, args.steps + 1):
        a, p, n, lab = sample_triplets(centers, args.batch, 1.8, rng)
        ea, ep, en = enc(a), enc(p), enc(n)
        loss = F.triplet_margin_loss(ea, ep, en, margin=0.2)
        opt.zero_grad()
        loss.backward()
        opt.step()
        n_logged = record(ea, lab)

        if step % args.eval_every == 0:
            embs, labs = snapshot(last=16)
            acc = knn_accuracy(embs, labs)
            print(
                f"step {step:6d} | triplet {loss.item():.4f} | knn@5 {acc:.3f} | "
                f"logged {n_logged} batches | {time.time() - start:.1f}s"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=7000)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--classes", type=int, default=12)
    parser.add_argument("--eval-every", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1234)
    torch.set_num_threads(1)
    train(parser.parse_args())
