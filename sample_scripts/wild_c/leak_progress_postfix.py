# expect: leak
# holder: _postfix_history|ProgressBar|pbar
# pattern: home-made tqdm-like progress bar keeps every set_postfix() dict for a summary at close(); each dict holds small detached loss/accuracy tensors, one every log_interval steps, over one bar spanning the whole run (slow, small leak)
# step_ms: 2
"""Tabular MLP classifier with a hand-rolled progress bar (no tqdm dependency).

``ProgressBar.set_postfix(**kwargs)`` renders the postfix and also appends the
kwargs dict to ``self._postfix_history`` so ``close()`` can print min/mean of
each metric.  The caller passes tensors straight through (``loss=loss``,
``acc=acc``); the author detached the loss and assumed that was enough.  But
each history entry is still a dict plus two 0-d tensors (each a full tensor
object with its own storage), and the bar covers all epochs, so the history
grows by one dict every few steps for the whole run -- a slow, small leak.

Fix: pass ``loss.item()`` and keep running aggregates (count/sum/min) instead
of every dict.
"""
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)
torch.manual_seed(0)


class ProgressBar:
    def __init__(self, total, desc="", width=30, every=0.5, file=sys.stdout):
        self.total, self.desc, self.width = total, desc, width
        self.n = 0
        self.every = every
        self.file = file
        self._last_print = 0.0
        self._postfix = {}
        self._postfix_history = []
        self._t0 = time.time()

    def set_postfix(self, **kwargs):
        self._postfix = kwargs
        self._postfix_history.append(kwargs)

    def update(self, n=1):
        self.n += n
        now = time.time()
        if now - self._last_print >= self.every or self.n == self.total:
            self._last_print = now
            self.refresh()

    def _fmt(self, v):
        if torch.is_tensor(v):
            v = v.item()
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    def refresh(self):
        frac = self.n / self.total
        bar = "#" * int(frac * self.width)
        post = ", ".join(f"{k}={self._fmt(v)}" for k, v in self._postfix.items())
        el = time.time() - self._t0
        self.file.write(f"\r{self.desc} |{bar:<{self.width}}| {self.n}/{self.total} [{el:.0f}s] {post}")
        self.file.flush()

    def close(self):
        self.refresh()
        self.file.write("\n")
        keys = self._postfix_history[-1].keys() if self._postfix_history else []
        for k in keys:
            vals = [float(d[k]) for d in self._postfix_history if k in d]
            print(f"  {k}: min {min(vals):.4g}  mean {sum(vals)/len(vals):.4g}  last {vals[-1]:.4g}")


class Tabular(Dataset):
    def __init__(self, n, d=32, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, d, generator=g)
        w = torch.randn(d, 3, generator=torch.Generator().manual_seed(99))
        self.y = (self.x @ w + 0.5 * torch.randn(n, 3, generator=g)).argmax(1)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def main():
    train_dl = DataLoader(Tabular(2048), batch_size=32, shuffle=True, num_workers=0)
    val_dl = DataLoader(Tabular(512, seed=1), batch_size=256, num_workers=0)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Dropout(0.1),
                          nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 3))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.98)

    epochs = 270
    log_interval = 10
    pbar = ProgressBar(total=epochs * len(train_dl), desc="train", every=2.0)
    for epoch in range(epochs):
        model.train()
        for batch, (x, y) in enumerate(train_dl):
            logits = model(x)
            loss = loss_fn(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if batch % log_interval == 0:
                acc = (logits.argmax(1) == y).float().mean()
                pbar.set_postfix(epoch=epoch, loss=loss.detach(), acc=acc, lr=scheduler.get_last_lr()[0])
            pbar.update()
        scheduler.step()
    pbar.close()

    model.eval()
    with torch.no_grad():
        correct = sum((model(x).argmax(1) == y).sum().item() for x, y in val_dl)
    print(f"val acc {correct / len(val_dl.dataset):.3f}")


if __name__ == "__main__":
    main()
