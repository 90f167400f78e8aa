# expect: leak
# holder: seen_batches|history
# pattern: custom torch.utils.data.Sampler for loss-proportional hard-example mining yields one index batch per step and appends idx.tolist() to self.seen_batches for a per-epoch "coverage" report; __iter__ never resets the list and the sampler outlives every epoch, so a 512-int Python list is kept per step (tabular MLP, SGD with momentum)
# step_ms: 4
"""Tabular classifier with a hard-example-mining sampler.

Instead of uniform shuffling, ``LossWeightedBatchSampler`` draws each batch
with probability proportional to an exponential moving average of every
sample's last loss, so examples the model still gets wrong are revisited
more often.  The trainer feeds the per-sample losses back with
``sampler.update(idx, losses)``.

Because weighted sampling can starve parts of the dataset, the sampler
remembers which indices it has handed out so that we can print a coverage
figure (fraction of the dataset seen at least once) at the end of every
epoch.
"""
import itertools
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

torch.set_num_threads(1)
torch.manual_seed(0)
np.random.seed(0)

N_SAMPLES = 200_000
N_FEATURES = 48
N_CLASSES = 5
BATCH = 512
STEPS_PER_EPOCH = 150
EPOCHS = 18


def make_tabular_data(n, d, k):
    """Synthetic tabular data: a few informative columns + noisy ones."""
    x = np.random.randn(n, d).astype(np.float32)
    w = np.random.randn(d, k).astype(np.float32) * (np.random.rand(d, 1) < 0.3)
    logits = x @ w + 0.5 * np.random.randn(n, k).astype(np.float32)
    y = logits.argmax(1).astype(np.int64)
    # some heavy-tailed columns, as in real tabular data
    x[:, :4] = np.sign(x[:, :4]) * np.abs(x[:, :4]) ** 2
    return torch.from_numpy(x), torch.from_numpy(y)


class TabularDataset(Dataset):
    """Index with a whole LongTensor of row ids (used with batch_size=None)."""

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, idx):
        return idx, self.x[idx], self.y[idx]


class LossWeightedBatchSampler(Sampler):
    def __init__(self, n, batch_size, steps_per_epoch, momentum=0.9, floor=0.05):
        self.n = n
        self.batch_size = batch_size
        self.steps_per_epoch = steps_per_epoch
        self.momentum = momentum
        self.floor = floor
        self.loss_ema = torch.ones(n)
        self.seen_batches = []   # for the coverage report

    def __len__(self):
        return self.steps_per_epoch

    def __iter__(self):
        for _ in range(self.steps_per_epoch):
            w = self.loss_ema + self.floor
            idx = torch.multinomial(w, self.batch_size, replacement=True)
            self.seen_batches.append(idx.tolist())
            yield idx

    def update(self, idx, losses):
        m = self.momentum
        self.loss_ema[idx] = m * self.loss_ema[idx] + (1 - m) * losses

    def coverage(self):
        seen = set(itertools.chain.from_iterable(self.seen_batches))
        return len(seen) / self.n


class MLP(nn.Module):
    def __init__(self, d, k, h=128):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU(),
            nn.Linear(h, h), nn.ReLU(),
            nn.Linear(h, k),
        )

    def forward(self, x):
        return self.net(x)


def main():
    x, y = make_tabular_data(N_SAMPLES, N_FEATURES, N_CLASSES)
    ds = TabularDataset(x, y)
    sampler = LossWeightedBatchSampler(N_SAMPLES, BATCH, STEPS_PER_EPOCH)
    loader = DataLoader(ds, sampler=sampler, batch_size=None)

    model = MLP(N_FEATURES, N_CLASSES)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)

    t0 = time.time()
    for epoch in range(EPOCHS):
        model.train()
        tot, correct, count = 0.0, 0, 0
        for idx, xb, yb in loader:
            logits = model(xb)
            per_sample = F.cross_entropy(logits, yb, reduction="none")
            loss = per_sample.mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sampler.update(idx, per_sample.detach())
            tot += loss.item() * len(yb)
            correct += (logits.argmax(1) == yb).sum().item()
            count += len(yb)
        print(f"epoch {epoch:2d}  loss {tot / count:.4f}  acc {correct / count:.3f}  "
              f"coverage {sampler.coverage():.3f}  ({time.time() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
