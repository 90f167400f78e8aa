# expect: leak
# holder: epoch_val_preds|val_preds
# pattern: validation runs without torch.no_grad(); each epoch's concatenated logits (still attached to the whole validation graph) are kept in a list to track prediction drift
# step_ms: 9
"""Student project: small CNN on a synthetic "shapes" dataset (Dataset + DataLoader).

``validate()`` forgets ``torch.no_grad()`` and the concatenated validation logits
are appended to ``epoch_val_preds`` so that prediction stability across epochs can
be plotted at the end. Because the logits require grad, every stored tensor keeps
the activations of every validation batch of that epoch alive.
Fix: wrap validate() in ``torch.no_grad()`` (or store ``logits.detach()``).
"""
import time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader

torch.set_num_threads(1)
torch.manual_seed(0)


class ShapesDataset(Dataset):
    """Procedurally drawn squares / crosses / circles / noise on 32x32 canvases."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, 4, size=n)
        self.images = np.zeros((n, 1, 32, 32), dtype=np.float32)
        yy, xx = np.mgrid[:32, :32]
        for i, lab in enumerate(self.labels):
            cx, cy = rng.integers(8, 24, size=2)
            r = rng.integers(4, 8)
            if lab == 0:
                m = (abs(xx - cx) < r) & (abs(yy - cy) < r)
            elif lab == 1:
                m = (abs(xx - cx) < 2) | (abs(yy - cy) < 2)
            elif lab == 2:
                m = (xx - cx) ** 2 + (yy - cy) ** 2 < r * r
            else:
                m = rng.random((32, 32)) < 0.2
            self.images[i, 0][m] = 1.0
        self.images += 0.3 * rng.standard_normal(self.images.shape).astype(np.float32)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return torch.from_numpy(self.images[idx]), int(self.labels[idx])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc1 = nn.Linear(16 * 8 * 8, 64)
        self.fc2 = nn.Linear(64, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def train_one_epoch(model, loader, opt):
    model.train()
    total = 0.0
    for x, y in loader:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        total += loss.item()
    return total / len(loader)


def validate(model, loader):
    model.eval()
    preds, correct = [], 0
    for x, y in loader:
        out = model(x)
        preds.append(out)
        correct += (out.argmax(1) == y).sum().item()
    return torch.cat(preds), correct / len(loader.dataset)


def main():
    train_ds = ShapesDataset(2400, seed=1)
    val_ds = ShapesDataset(120, seed=2)
    train_loader = DataLoader(train_ds, batch_size=64, shuffle=True, num_workers=0)
    val_loader = DataLoader(val_ds, batch_size=40, shuffle=False, num_workers=0)

    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    epoch_val_preds = []
    t0 = time.time()
    n_epochs = 30
    for epoch in range(n_epochs):
        tr_loss = train_one_epoch(model, train_loader, opt)
        logits, acc = validate(model, val_loader)
        epoch_val_preds.append(logits)
        if epoch % 4 == 0:
            print(f"epoch {epoch:2d} train_loss={tr_loss:.3f} val_acc={acc:.3f} ({time.time() - t0:.1f}s)")

    # how often did the predicted class flip between consecutive epochs?
    labels = [p.argmax(1) for p in epoch_val_preds]
    flips = [(a != b).float().mean().item() for a, b in zip(labels[:-1], labels[1:])]
    print("prediction flips per epoch:", " ".join(f"{f:.2f}" for f in flips[-5:]))
    n_steps = n_epochs * (len(train_loader) + len(val_loader))
    print(f"done, {1000 * (time.time() - t0) / n_steps:.1f} ms/step")


if __name__ == "__main__":
    main()
