# expect: no_leak
# holder: none
# pattern: notebook-style top-level cells; Adam state and autograd buffers warm up in the first steps, then memory is flat; loss history stores Python floats via loss.item()
# step_ms: 1
"""Customer-churn classifier, exported from a Kaggle notebook (cells kept as-is).

Module-level code only. The training cell logs ``loss.item()`` (a float) and a few
per-epoch scalars, so nothing holds on to tensors or graphs. Memory rises during
the first steps (Adam moments, allocator caches) and then stays flat.
"""
# %% imports
import time
import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(0)
rng = np.random.default_rng(0)

# %% synthetic "telco churn" table
N = 30000
tenure = rng.integers(0, 72, N)
monthly = rng.uniform(20, 120, N)
contract = rng.integers(0, 3, N)           # month-to-month / 1y / 2y
support_calls = rng.poisson(1.5, N)
extra = rng.standard_normal((N, 20))
logit = -1.0 - 0.04 * tenure + 0.02 * monthly - 1.2 * contract + 0.4 * support_calls + 0.3 * extra[:, 0]
churn = (rng.random(N) < 1 / (1 + np.exp(-logit))).astype(np.float32)
print("churn rate: %.3f" % churn.mean())

# %% preprocessing
num = np.column_stack([tenure, monthly, support_calls, extra]).astype(np.float32)
num = (num - num.mean(0)) / num.std(0)
onehot = np.eye(3, dtype=np.float32)[contract]
X = torch.from_numpy(np.hstack([num, onehot]))
y = torch.from_numpy(churn)
n_tr = int(0.8 * N)
X_tr, y_tr, X_te, y_te = X[:n_tr], y[:n_tr], X[n_tr:], y[n_tr:]

# %% model
model = nn.Sequential(nn.Linear(X.shape[1], 128), nn.ReLU(), nn.BatchNorm1d(128),
                      nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1))
pos_weight = torch.tensor([(1 - churn.mean()) / churn.mean()])
criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=12, gamma=0.5)

# %% train
loss_history = []
epoch_log = []
t0 = time.time()
steps = 0
EPOCHS = 50
for epoch in range(EPOCHS):
    model.train()
    perm = torch.randperm(n_tr)
    for i in range(0, n_tr, 64):
        idx = perm[i:i + 64]
        loss = criterion(model(X_tr[idx]).squeeze(1), y_tr[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_history.append(loss.item())
        steps += 1
    scheduler.step()
    model.eval()
    with torch.no_grad():
        p = torch.sigmoid(model(X_te).squeeze(1))
        acc = ((p > 0.5).float() == y_te).float().mean().item()
    epoch_log.append({"epoch": epoch, "train_loss": float(np.mean(loss_history[-n_tr // 64:])), "test_acc": acc})
    if epoch % 10 == 0:
        print(epoch_log[-1], f"({time.time() - t0:.1f}s)")

# %% summary
print(f"{steps} steps, {1000 * (time.time() - t0) / steps:.2f} ms/step")
best = max(epoch_log, key=lambda r: r["test_acc"])
print("best epoch:", best)
