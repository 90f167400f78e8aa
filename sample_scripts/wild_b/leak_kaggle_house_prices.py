# expect: leak
# holder: train_history|history
# pattern: notebook-style top-level cells; the raw loss tensor (with its autograd graph) is appended to a module-level list every step
# step_ms: 4
"""House-price regression, exported from a Kaggle notebook (cells kept as-is).

Everything lives at module level. In the training cell the loss tensor itself is
appended to ``train_history`` so that it can be plotted at the end; every entry
keeps its whole autograd graph (activations of the 4-layer MLP for the batch)
alive, so memory grows by a few hundred KB per step.
Fix: ``train_history.append(loss.item())``.
"""
# %% [code] imports
import time
import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(42)
np.random.seed(42)

# %% [code] "load" the data (synthetic stand-in for train.csv)
N_ROWS = 20000
N_NUM = 30
N_CAT = 8
num_feats = np.random.randn(N_ROWS, N_NUM).astype(np.float32)
cat_feats = np.random.randint(0, 12, size=(N_ROWS, N_CAT))
true_w = np.random.randn(N_NUM).astype(np.float32)
sale_price = np.exp(11.5 + 0.3 * np.tanh(num_feats @ true_w / 5) + 0.05 * np.random.randn(N_ROWS))
print("train shape:", num_feats.shape, cat_feats.shape, "price mean: %.0f" % sale_price.mean())

# %% [code] feature engineering: one-hot the categoricals, log-transform target
one_hot = np.zeros((N_ROWS, N_CAT * 12), dtype=np.float32)
for j in range(N_CAT):
    one_hot[np.arange(N_ROWS), j * 12 + cat_feats[:, j]] = 1.0
X_all = np.concatenate([num_feats, one_hot], axis=1)
y_all = np.log1p(sale_price).astype(np.float32)
y_mean, y_std = y_all.mean(), y_all.std()
y_all = (y_all - y_mean) / y_std

split = int(0.85 * N_ROWS)
X_train = torch.from_numpy(X_all[:split])
y_train = torch.from_numpy(y_all[:split]).unsqueeze(1)
X_valid = torch.from_numpy(X_all[split:])
y_valid = torch.from_numpy(y_all[split:]).unsqueeze(1)

# %% [code] model
model = nn.Sequential(
    nn.Linear(X_all.shape[1], 256), nn.ReLU(), nn.Dropout(0.1),
    nn.Linear(256, 256), nn.ReLU(), nn.Dropout(0.1),
    nn.Linear(256, 128), nn.ReLU(),
    nn.Linear(128, 1),
)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
criterion = nn.MSELoss()
BATCH = 128
EPOCHS = 30

# %% [code] training
train_history = []
valid_history = []
t_start = time.time()
n_steps = 0
for epoch in range(EPOCHS):
    model.train()
    perm = torch.randperm(X_train.shape[0])
    for i in range(0, X_train.shape[0], BATCH):
        idx = perm[i:i + BATCH]
        xb, yb = X_train[idx], y_train[idx]
        pred = model(xb)
        loss = criterion(pred, yb)
        optimizer.zero_grad()
        loss.backward(retain_graph=False)
        optimizer.step()
        train_history.append(loss)
        n_steps += 1
    model.eval()
    with torch.no_grad():
        val_rmse = torch.sqrt(criterion(model(X_valid), y_valid)).item()
    valid_history.append(val_rmse)
    if epoch % 5 == 0 or epoch == EPOCHS - 1:
        recent = torch.stack(train_history[-50:]).mean().item()
        print(f"epoch {epoch:2d}  train_mse {recent:.4f}  valid_rmse {val_rmse:.4f}  ({time.time() - t_start:.1f}s)")

# %% [code] results
elapsed = time.time() - t_start
print(f"{n_steps} steps, {1000 * elapsed / n_steps:.2f} ms/step")
curve = torch.stack(train_history).detach().numpy()
print("first/last train loss: %.4f / %.4f" % (curve[:100].mean(), curve[-100:].mean()))
print("best valid rmse: %.4f (epoch %d)" % (min(valid_history), int(np.argmin(valid_history))))
