# expect: leak
# holder: checkpoints|EarlyStopping|early_stopping
# pattern: EarlyStopping helper deep-copies the whole model (weights and .grad) into self.checkpoints on every call so it can "restore any epoch", instead of keeping only the best
# step_ms: 7
"""Fully-connected VAE on synthetic 28x28 data with an early-stopping helper.

The ``EarlyStopping`` class is the usual copy-pasted one (patience, delta,
``early_stop`` flag), extended so that it can restore "the best epoch" at the
end.  It does that by appending ``copy.deepcopy(model)`` to
``self.checkpoints`` on *every* call and remembering the best index.  The
deep copy also duplicates each parameter's ``.grad``.  Nothing is ever
removed from the list, so memory grows by ~2x the model size per epoch.

Fix: keep only the best ``state_dict`` (replace it when the score improves),
or save checkpoints to disk.
"""
import copy
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)
torch.manual_seed(1)


class BlobImages(Dataset):
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        yy, xx = np.mgrid[0:28, 0:28]
        imgs = np.zeros((n, 28, 28), dtype=np.float32)
        for i in range(n):
            for _ in range(rng.integers(1, 4)):
                cx, cy, s = rng.uniform(5, 23), rng.uniform(5, 23), rng.uniform(1.5, 4)
                imgs[i] += np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * s * s))
        self.data = torch.from_numpy(np.clip(imgs, 0, 1)).view(n, -1)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.data[i]


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 400)
        self.fc21 = nn.Linear(400, 20)
        self.fc22 = nn.Linear(400, 20)
        self.fc3 = nn.Linear(20, 400)
        self.fc4 = nn.Linear(400, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


class EarlyStopping:
    """Stop training if validation loss doesn't improve after `patience` epochs."""

    def __init__(self, patience=7, delta=0.0, verbose=False):
        self.patience = patience
        self.delta = delta
        self.verbose = verbose
        self.counter = 0
        self.best_score = None
        self.best_index = -1
        self.early_stop = False
        self.val_loss_min = np.inf
        self.checkpoints = []

    def __call__(self, val_loss, model):
        score = -val_loss
        self.checkpoints.append(copy.deepcopy(model))
        if self.best_score is None or score > self.best_score + self.delta:
            self.best_score = score
            self.best_index = len(self.checkpoints) - 1
            if self.verbose:
                print(f"  val loss decreased ({self.val_loss_min:.4f} --> {val_loss:.4f})")
            self.val_loss_min = val_loss
            self.counter = 0
        else:
            self.counter += 1
            if self.counter >= self.patience:
                self.early_stop = True

    def best_model(self):
        return self.checkpoints[self.best_index]


def train(dataloader, model, optimizer):
    model.train()
    train_loss = 0
    for data in dataloader:
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
    return train_loss / len(dataloader.dataset)


def test(dataloader, model):
    model.eval()
    test_loss = 0
    with torch.no_grad():
        for data in dataloader:
            recon, mu, logvar = model(data)
            test_loss += loss_function(recon, data, mu, logvar).item()
    return test_loss / len(dataloader.dataset)


def main():
    train_loader = DataLoader(BlobImages(4800, 0), batch_size=64, shuffle=True, num_workers=0)
    test_loader = DataLoader(BlobImages(256, 1), batch_size=128, num_workers=0)
    model = VAE()
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    early_stopping = EarlyStopping(patience=10, delta=0.05)

    epochs = 36
    t0 = time.time()
    for epoch in range(1, epochs + 1):
        tr = train(train_loader, model, optimizer)
        te = test(test_loader, model)
        early_stopping(te, model)
        if epoch % 5 == 0:
            print(f"====> Epoch {epoch}: train {tr:.2f}  test {te:.2f}  best@{early_stopping.best_index+1}  ({time.time()-t0:.1f}s)")
        if early_stopping.early_stop:
            print(f"Early stopping at epoch {epoch}")
            break

    model = early_stopping.best_model()
    print(f"restored epoch {early_stopping.best_index+1}, test loss {test(test_loader, model):.2f}")


if __name__ == "__main__":
    main()
