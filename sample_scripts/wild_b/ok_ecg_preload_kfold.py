# expect: no_leak
# holder: none
# pattern: large dataset preloaded into RAM at start (~180 MB), then 5-fold CV that re-creates model and optimizer per fold; the previous fold's objects are released, so memory is a big step followed by a flat line
# step_ms: 22
"""Arrhythmia detection on synthetic ECG windows with 5-fold cross-validation.

All windows are generated and kept in one float32 array up front (big, but
allocated once). Each fold builds a new 1-D CNN and a new Adam optimizer,
trains a fixed number of steps on random batches drawn from the fold's training
indices, and scores the held-out windows in chunks under ``torch.no_grad()``.
Only per-fold floats are kept, so after the preload memory stays flat.
"""
import time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(17)
N_WIN, LEN, FS = 48_000, 1000, 250

# ---------------------------------------------------------------- preload
t_load = time.time()
X = np.empty((N_WIN, LEN), dtype=np.float32)
y = rng.integers(0, 2, N_WIN)
t = np.arange(LEN) / FS
beat = np.exp(-((t[:60] - 0.12) ** 2) / 0.0004).astype(np.float32)  # QRS-like bump
for start in range(0, N_WIN, 2000):
    stop = min(start + 2000, N_WIN)
    n = stop - start
    hr = np.where(y[start:stop] == 1, rng.uniform(95, 150, n), rng.uniform(55, 100, n))
    sig = 0.2 * np.sin(2 * np.pi * 0.3 * t)[None, :] + 0.05 * rng.standard_normal((n, LEN))
    for i in range(n):
        rr = 60.0 / hr[i] * FS
        jitter = 0.25 if y[start + i] else 0.02   # irregular rhythm for class 1
        pos = rng.uniform(0, rr)
        while pos < LEN - 60:
            p = int(pos)
            sig[i, p:p + 60] += beat
            pos += max(rr * (1 + jitter * rng.standard_normal()), 40.0)
    X[start:stop] = sig
print(f"preloaded {X.nbytes / 2**20:.0f} MB of ECG windows in {time.time() - t_load:.1f}s")
Xt = torch.from_numpy(X)
yt = torch.from_numpy(y)


class ECGNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(1, 16, 9, stride=2, padding=4), nn.ReLU(),
            nn.Conv1d(16, 32, 9, stride=2, padding=4), nn.ReLU(),
            nn.Conv1d(32, 32, 9, stride=2, padding=4), nn.ReLU(),
        )
        self.head = nn.Linear(64, 2)

    def forward(self, x):
        h = self.conv(x.unsqueeze(1))
        # crude rhythm features: mean and std over time of each channel
        return self.head(torch.cat([h.mean(2), h.std(2)], 1))


K, STEPS_PER_FOLD, BS = 5, 200, 64
folds = np.array_split(rng.permutation(N_WIN), K)
fold_acc = []
t0 = time.time()
for k in range(K):
    val_idx = torch.from_numpy(folds[k])
    tr_idx = torch.from_numpy(np.concatenate([folds[j] for j in range(K) if j != k]))
    model = ECGNet()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for step in range(STEPS_PER_FOLD):
        b = tr_idx[torch.randint(len(tr_idx), (BS,))]
        loss = F.cross_entropy(model(Xt[b]), yt[b])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, 4000, 500):          # score a subset of the held-out fold
            b = val_idx[i:i + 500]
            correct += (model(Xt[b]).argmax(1) == yt[b]).sum().item()
    fold_acc.append(correct / 4000)
    print(f"fold {k}: acc {fold_acc[-1]:.3f}, last loss {loss.item():.3f} ({time.time() - t0:.1f}s)")

print(f"CV accuracy {np.mean(fold_acc):.3f} +- {np.std(fold_acc):.3f}")
print(f"{K * STEPS_PER_FOLD} steps, {1000 * (time.time() - t0) / (K * STEPS_PER_FOLD):.1f} ms/step")
