# expect: leak
# holder: fold_results
# pattern: repeated k-fold CV re-creates the model each fold but keeps every fold's model, optimizer and best state_dict in a results list "for ensembling" that is never used
# step_ms: 15
"""Repeated stratified 5-fold CV for a tabular MLP (Kaggle "tabular playground").

A fresh model + Adam optimizer is built for every fold, which is fine, but the
fold's model, its optimizer (with Adam moment buffers) and a deep copy of the best
weights are appended to ``fold_results`` "so we can ensemble later". The ensemble
is never built; only the OOF scores are used. Each fold adds several MB.
Fix: keep only the OOF predictions / score, or save best_state to disk.
"""
import copy
import time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)
rng = np.random.default_rng(7)

# --- synthetic "train.csv" --------------------------------------------------
N, D = 5000, 200
X = rng.standard_normal((N, D)).astype(np.float32)
w = rng.standard_normal(D) * (rng.random(D) < 0.1)
logits = X @ w + 0.5 * np.sin(X[:, 0] * 3)
y = (logits + 0.5 * rng.standard_normal(N) > 0).astype(np.int64)


def make_folds(y, n_splits, seed):
    """Stratified fold ids without sklearn."""
    r = np.random.default_rng(seed)
    fold_id = np.empty(len(y), dtype=np.int64)
    for cls in np.unique(y):
        idx = np.where(y == cls)[0]
        r.shuffle(idx)
        fold_id[idx] = np.arange(len(idx)) % n_splits
    return fold_id


def build_model():
    return nn.Sequential(
        nn.Linear(D, 512), nn.BatchNorm1d(512), nn.SiLU(), nn.Dropout(0.2),
        nn.Linear(512, 512), nn.BatchNorm1d(512), nn.SiLU(), nn.Dropout(0.2),
        nn.Linear(512, 2),
    )


def auc(scores, labels):
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    return (ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * (~pos).sum())


N_SPLITS, N_REPEATS, EPOCHS, BS = 5, 4, 4, 256
Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
fold_results = []
repeat_scores = []
t0 = time.time()
steps = 0
for rep in range(N_REPEATS):
    fold_id = make_folds(y, N_SPLITS, seed=rep)
    oof = np.zeros(N, dtype=np.float32)
    for k in range(N_SPLITS):
        tr_idx = torch.from_numpy(np.where(fold_id != k)[0])
        va_idx = torch.from_numpy(np.where(fold_id == k)[0])
        model = build_model()
        optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
        best_auc, best_state = -1.0, None
        for epoch in range(EPOCHS):
            model.train()
            perm = tr_idx[torch.randperm(len(tr_idx))]
            for i in range(0, len(perm), BS):
                b = perm[i:i + BS]
                if len(b) < 2:
                    continue
                loss = F.cross_entropy(model(Xt[b]), yt[b])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                steps += 1
            model.eval()
            with torch.no_grad():
                p = F.softmax(model(Xt[va_idx]), dim=1)[:, 1].numpy()
            score = auc(p, y[va_idx.numpy()])
            if score > best_auc:
                best_auc, best_state = score, copy.deepcopy(model.state_dict())
                oof[va_idx.numpy()] = p
        fold_results.append({
            "repeat": rep, "fold": k, "auc": best_auc,
            "model": model, "optimizer": optimizer, "best_state": best_state,
        })
    repeat_scores.append(auc(oof, y))
    print(f"repeat {rep}: OOF AUC {repeat_scores[-1]:.4f}  fold AUCs "
          + " ".join(f"{r['auc']:.3f}" for r in fold_results[-N_SPLITS:])
          + f"  ({time.time() - t0:.1f}s)")

print(f"CV AUC {np.mean(repeat_scores):.4f} +- {np.std(repeat_scores):.4f}")
print(f"{steps} steps, {1000 * (time.time() - t0) / steps:.1f} ms/step")
