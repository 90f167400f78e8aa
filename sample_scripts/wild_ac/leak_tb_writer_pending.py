# expect: leak
# holder: writer._pending|_pending|TBWriter._pending|logger._pending
# pattern: Kaggle-style credit-default MLP on synthetic tabular data (categorical embeddings + numeric features, torch.optim.AdamW, ReduceLROnPlateau + early stopping on validation AUC, ~8 ms steps, code at module level + a home-made TensorBoard-like TBWriter that writes JSON-lines event files, curves plotted with matplotlib at the end); TBWriter buffers events in self._pending = defaultdict(list) keyed by tag and is meant to flush when max_queue (10, like tensorboardX) events are queued or every flush_secs (120 s); the size check is `len(self._pending) >= self.max_queue`, i.e. the number of distinct tags (9 here: loss, val AUC, lr and weight/grad histograms of the three hidden Linear layers), so it never triggers, and a run shorter than flush_secs never flushes on time either; add_histogram() keeps a raw float32 copy of every weight and gradient tensor (binned only at flush time so all steps share one range) every 10 steps, so the pending buffer grows by ~2 MB per histogram round until close()
# step_ms: 8
"""Credit default baseline (MLP) - cleaned up from the competition notebook."""
import json
import os
import tempfile
import time
from collections import defaultdict

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
rng = np.random.default_rng(42)
torch.manual_seed(42)

# %% ---------------------------------------------------------------- synthetic "application" table
N_ROWS = 120_000
CAT_CARD = [12, 7, 30, 4, 58, 3, 16]        # contract type, education, occupation, ...
N_NUM = 40
cats = np.stack([rng.integers(c, size=N_ROWS) for c in CAT_CARD], 1)
nums = rng.standard_normal((N_ROWS, N_NUM)).astype(np.float32)
nums[:, :5] = np.exp(nums[:, :5])                              # skewed amounts
w_num = rng.normal(0, 0.4, N_NUM)
cat_eff = [rng.normal(0, 0.6, c) for c in CAT_CARD]
logit = -2.2 + np.log1p(nums[:, :5]) @ w_num[:5] + nums[:, 5:] @ w_num[5:] * 0.5
logit += sum(e[cats[:, j]] for j, e in enumerate(cat_eff))
logit += 0.8 * np.sin(nums[:, 6] * nums[:, 7])
target = (rng.random(N_ROWS) < 1 / (1 + np.exp(-logit))).astype(np.float32)
nums[:, :5] = np.log1p(nums[:, :5])
nums = (nums - nums.mean(0)) / nums.std(0)

perm = rng.permutation(N_ROWS)
tr, va = perm[:100_000], perm[100_000:]
Xc_tr, Xn_tr, y_tr = torch.from_numpy(cats[tr]), torch.from_numpy(nums[tr]), torch.from_numpy(target[tr])
Xc_va, Xn_va, y_va = torch.from_numpy(cats[va]), torch.from_numpy(nums[va]), torch.from_numpy(target[va])
print(f"train {len(tr)} rows, default rate {y_tr.mean():.3f}")


# %% ---------------------------------------------------------------- logging
class TBWriter:
    """Tiny TensorBoard-ish event writer (JSON lines), no tensorboard dependency on the cluster."""

    def __init__(self, logdir, max_queue=10, flush_secs=120):
        os.makedirs(logdir, exist_ok=True)
        self.path = os.path.join(logdir, "events.jsonl")
        open(self.path, "w").close()            # new run, new event file
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self._pending = defaultdict(list)
        self._last_flush = time.time()

    def _maybe_flush(self):
        if len(self._pending) >= self.max_queue or time.time() - self._last_flush > self.flush_secs:
            self.flush()

    def add_scalar(self, tag, value, step):
        self._pending[tag].append((step, float(value)))
        self._maybe_flush()

    def add_histogram(self, tag, values, step):
        # keep raw values; bins are computed at flush time so all steps share a range
        self._pending[tag].append((step, values.detach().cpu().numpy().astype(np.float32).ravel().copy()))
        self._maybe_flush()

    def flush(self):
        with open(self.path, "a") as fh:
            for tag, events in self._pending.items():
                if events and isinstance(events[0][1], np.ndarray):
                    lo = min(v.min() for _, v in events)
                    hi = max(v.max() for _, v in events)
                    for step, v in events:
                        counts, _ = np.histogram(v, bins=64, range=(lo, hi))
                        fh.write(json.dumps({"tag": tag, "step": step, "hist": counts.tolist(),
                                             "range": [float(lo), float(hi)]}) + "\n")
                else:
                    for step, v in events:
                        fh.write(json.dumps({"tag": tag, "step": step, "value": v}) + "\n")
        self._pending = defaultdict(list)
        self._last_flush = time.time()

    def close(self):
        self.flush()


# %% ---------------------------------------------------------------- model
class TabMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.embs = nn.ModuleList([nn.Embedding(c, min(16, (c + 1) // 2)) for c in CAT_CARD])
        d_in = N_NUM + sum(e.embedding_dim for e in self.embs)
        self.mlp = nn.Sequential(
            nn.Linear(d_in, 384), nn.BatchNorm1d(384), nn.SiLU(), nn.Dropout(0.2),
            nn.Linear(384, 384), nn.BatchNorm1d(384), nn.SiLU(), nn.Dropout(0.2),
            nn.Linear(384, 192), nn.SiLU(),
            nn.Linear(192, 1))

    def forward(self, xc, xn):
        e = [emb(xc[:, j]) for j, emb in enumerate(self.embs)]
        return self.mlp(torch.cat(e + [xn], 1)).squeeze(1)


def auc(scores, labels):
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


model = TabMLP()
opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="max", factor=0.5, patience=1)
pos_weight = torch.tensor((1 - y_tr.mean()) / y_tr.mean())
logdir = os.path.join(tempfile.gettempdir(), "runs", "credit_mlp")
writer = TBWriter(logdir)
HIST_EVERY = 10
BS = 512
MAX_SECONDS = 16.0

# %% ---------------------------------------------------------------- train
best_auc, best_state, bad, global_step = 0.0, None, 0, 0
curves = defaultdict(list)
t0 = last_print = time.time()
for epoch in range(100):
    model.train()
    idx = torch.randperm(len(y_tr))
    ep_loss = []
    for b in range(0, len(idx) - BS + 1, BS):
        bi = idx[b:b + BS]
        logits = model(Xc_tr[bi], Xn_tr[bi])
        loss = F.binary_cross_entropy_with_logits(logits, y_tr[bi], pos_weight=pos_weight)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ep_loss.append(loss.item())
        global_step += 1
        writer.add_scalar("train/loss", ep_loss[-1], global_step)
        if global_step % HIST_EVERY == 0:
            for name, p in model.mlp.named_parameters():
                if p.dim() == 2 and p.size(0) > 1:      # the 1-unit output layer is not worth a histogram
                    writer.add_histogram(f"weights/{name}", p, global_step)
                    writer.add_histogram(f"grads/{name}", p.grad, global_step)
        if time.time() - last_print > 2.0:
            last_print = time.time()
            print(f"epoch {epoch} step {global_step} loss {np.mean(ep_loss[-50:]):.4f} "
                  f"({last_print - t0:.1f}s)", flush=True)
    model.eval()
    with torch.no_grad():
        p_va = torch.cat([torch.sigmoid(model(Xc_va[i:i + 4096], Xn_va[i:i + 4096]))
                          for i in range(0, len(y_va), 4096)]).numpy()
    va_auc = auc(p_va, y_va.numpy())
    writer.add_scalar("val/auc", va_auc, global_step)
    curves["train_loss"].append(np.mean(ep_loss))
    curves["val_auc"].append(va_auc)
    sched.step(va_auc)
    writer.add_scalar("train/lr", opt.param_groups[0]["lr"], global_step)
    if va_auc > best_auc + 1e-4:
        best_auc, bad = va_auc, 0
        best_state = {k: v.clone() for k, v in model.state_dict().items()}
    else:
        bad += 1
    if bad >= 4 or time.time() - t0 > MAX_SECONDS:
        break

writer.close()
model.load_state_dict(best_state)
fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
ax[0].plot(curves["train_loss"]); ax[0].set_title("train loss")
ax[1].plot(curves["val_auc"]); ax[1].set_title("val AUC")
fig.tight_layout()
fig.savefig(os.path.join(logdir, "curves.png"))
plt.close(fig)
print(f"best val AUC {best_auc:.4f} after {epoch + 1} epochs; logs in {logdir}")
