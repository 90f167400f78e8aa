# expect: no_leak
# holder:
# pattern: CNN with ReduceLROnPlateau, gradient clipping and an early-stopping helper that deep-copies the model state_dict on improvement but keeps only the best one (replaced, never appended)
# step_ms: 150
"""CNN on random 3x48x48 images with ReduceLROnPlateau and early stopping.

``EarlyStopping`` looks scary -- it calls ``copy.deepcopy(model.state_dict())``
-- but it stores the copy in ``self.best_state``, overwriting the previous
one, so at most one extra copy of the weights exists at any time.  The
validation pass runs under ``torch.inference_mode()`` and uses ``.item()``;
the history lists only hold floats.
"""
import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)
torch.manual_seed(0)


class TexturedImages(Dataset):
    """Label = which of 6 oriented textures dominates the image."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        yy, xx = torch.meshgrid(torch.linspace(0, 6.28, 48), torch.linspace(0, 6.28, 48), indexing="ij")
        angles = torch.arange(6) * 3.14159 / 6
        bases = torch.stack([torch.sin(4 * (xx * torch.cos(a) + yy * torch.sin(a))) for a in angles])
        self.y = torch.randint(0, 6, (n,), generator=g)
        amp = 0.6 + 0.4 * torch.rand(n, 1, 1, generator=g)
        img = amp * bases[self.y] + 1.0 * torch.randn(n, 48, 48, generator=g)
        self.x = img.unsqueeze(1).repeat(1, 3, 1, 1) + 0.3 * torch.randn(n, 3, 48, 48, generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class ConvNet(nn.Module):
    def __init__(self, n_classes=6):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(64, n_classes))

    def forward(self, x):
        return self.head(self.features(x))


class EarlyStopping:
    def __init__(self, patience=8, min_delta=1e-4):
        self.patience, self.min_delta = patience, min_delta
        self.best_loss = float("inf")
        self.best_state = None
        self.best_epoch = -1
        self.counter = 0

    def step(self, val_loss, model, epoch):
        if val_loss < self.best_loss - self.min_delta:
            self.best_loss = val_loss
            self.best_state = copy.deepcopy(model.state_dict())
            self.best_epoch = epoch
            self.counter = 0
            return False
        self.counter += 1
        return self.counter >= self.patience


def train(dataloader, model, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in dataloader:
        optimizer.zero_grad()
        loss = loss_fn(model(X), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


def test(dataloader, model, loss_fn):
    model.eval()
    total, correct = 0.0, 0
    with torch.inference_mode():
        for X, y in dataloader:
            out = model(X)
            total += loss_fn(out, y).item() * len(y)
            correct += (out.argmax(1) == y).sum().item()
    n = len(dataloader.dataset)
    return total / n, correct / n


def main():
    train_dl = DataLoader(TexturedImages(384, 0), batch_size=32, shuffle=True, num_workers=0)
    val_dl = DataLoader(TexturedImages(128, 1), batch_size=64, num_workers=0)
    model = ConvNet()
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.05)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=2)
    stopper = EarlyStopping(patience=5)

    history = {"train_loss": [], "val_loss": [], "val_acc": [], "lr": []}
    epochs = 14
    t0 = time.time()
    for t in range(epochs):
        tr = train(train_dl, model, loss_fn, optimizer)
        vl, va = test(val_dl, model, loss_fn)
        scheduler.step(vl)
        for k, v in zip(history, (tr, vl, va, optimizer.param_groups[0]["lr"])):
            history[k].append(v)
        print(f"epoch {t+1:2d}  train {tr:.3f}  val {vl:.3f}  acc {va:.3f}  "
              f"lr {optimizer.param_groups[0]['lr']:.1e}  ({time.time()-t0:.1f}s)")
        if stopper.step(vl, model, t):
            print(f"early stopping at epoch {t+1}")
            break
    model.load_state_dict(stopper.best_state)
    vl, va = test(val_dl, model, loss_fn)
    print(f"best epoch {stopper.best_epoch+1}: val {vl:.3f} acc {va:.3f}")


if __name__ == "__main__":
    main()
