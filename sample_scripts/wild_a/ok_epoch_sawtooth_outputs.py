# expect: no_leak
# pattern: per-epoch sawtooth: every step appends detached numpy scores + embeddings to lists that are rebuilt at the start of each epoch (epoch-level AUC / embedding drift), so memory rises within the first epoch and is then reused (bounded plateau with sawtooth spikes)
# step_ms: 3
"""Click-through-rate style binary classifier; epoch-level ROC-AUC computed from collected scores.

All metric buffers (scores, targets, embeddings) are numpy copies of detached
tensors and are re-created at the start of every epoch, so RSS grows by ~50 MB
during an epoch and that memory is released (and reused by the allocator) when
the lists are replaced: a sawtooth / plateau with a constant peak, not a leak.  Only one float per epoch survives (epoch_auc).
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def roc_auc(scores, targets):
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = targets == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    n_fields, card, emb_dim = 8, 500, 16
    w_true = rng.standard_normal((n_fields, card)).astype(np.float32) * 0.6

    def batch(bs=512):
        ids = rng.integers(0, card, (bs, n_fields))
        logit = w_true[np.arange(n_fields), ids].sum(1) - 0.5
        y = (rng.random(bs) < 1 / (1 + np.exp(-logit))).astype(np.float32)
        return torch.from_numpy(ids), torch.from_numpy(y)

    emb = nn.Embedding(n_fields * card, emb_dim)
    mlp = nn.Sequential(nn.Linear(n_fields * emb_dim, 256), nn.ReLU(), nn.Linear(256, 64), nn.ReLU())
    head = nn.Linear(64, 1)
    params = list(emb.parameters()) + list(mlp.parameters()) + list(head.parameters())
    opt = torch.optim.Adagrad(params, lr=0.05)
    offsets = torch.arange(n_fields) * card

    epoch_auc = []
    prev_centroid = None
    t0 = time.time()
    for epoch in range(10):
        scores, targets, embeddings = [], [], []
        for step in range(400):
            ids, y = batch()
            z = mlp(emb(ids + offsets).flatten(1))
            logit = head(z).squeeze(1)
            loss = F.binary_cross_entropy_with_logits(logit, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            scores.append(torch.sigmoid(logit).detach().numpy().copy())
            targets.append(y.numpy())
            embeddings.append(z.detach().numpy().copy())

        s, t = np.concatenate(scores), np.concatenate(targets)
        centroid = np.concatenate(embeddings).mean(0)
        drift = 0.0 if prev_centroid is None else float(np.linalg.norm(centroid - prev_centroid))
        prev_centroid = centroid
        epoch_auc.append(float(roc_auc(s, t)))
        print(f"epoch {epoch}  auc {epoch_auc[-1]:.4f}  embedding drift {drift:.3f}"
              f"  ({time.time() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
