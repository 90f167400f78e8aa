# expect: leak
# holder: handlers|RecentLinesHandler|lines
# pattern: setup_logging() is called at the start of every epoch and adds another in-memory "dashboard" handler to the same named logger; handlers pile up, each keeping its own buffer of formatted lines
# step_ms: 4
"""Small CNN on random 1x28x28 images with StepLR and gradient clipping.

``setup_logging(epoch)`` is called at the top of each epoch so the epoch
number shows up in the log format.  Each call does
``logging.getLogger("trainer").addHandler(RecentLinesHandler(...))`` -- but
``getLogger`` returns the same logger every time, so the handlers pile up.
Every per-step debug line is then formatted once per handler and stored in
every handler's ring buffer (each buffer is bounded, the number of buffers is
not).  Symptom people report: "duplicate log lines and RAM slowly creeping".

Fix: create the handler once (or remove the old one / check
``logger.handlers`` before adding), and use a LoggerAdapter or a Filter for
the epoch number.
"""
import collections
import logging
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)
torch.manual_seed(0)


class RecentLinesHandler(logging.Handler):
    """Keeps the most recent log lines for the live dashboard."""

    def __init__(self, capacity=1500):
        super().__init__(level=logging.DEBUG)
        self.lines = collections.deque(maxlen=capacity)

    def emit(self, record):
        self.lines.append(self.format(record))


def setup_logging(epoch):
    logger = logging.getLogger("trainer")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    handler = RecentLinesHandler()
    handler.setFormatter(logging.Formatter(
        f"%(asctime)s [epoch {epoch:03d}] %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    if not any(isinstance(h, logging.StreamHandler) for h in logger.handlers):
        console = logging.StreamHandler(sys.stdout)
        console.setLevel(logging.INFO)
        console.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(console)
    return logger


class RandomShapes(Dataset):
    def __init__(self, n, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 1, 28, 28, generator=g)
        self.y = (self.x[:, 0, 10:18, 10:18].mean((1, 2)) > 0).long() + 2 * (self.x[:, 0, :, :14].mean((1, 2)) > 0).long()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 7 * 7, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def train(dataloader, model, loss_fn, optimizer, logger, epoch):
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        pred = model(X)
        loss = loss_fn(pred, y)
        optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        logger.debug("step=%d loss=%.5f grad_norm=%.4f lr=%.3e batch_size=%d",
                     batch, loss.item(), grad_norm.item(), optimizer.param_groups[0]["lr"], len(X))


def test(dataloader, model, loss_fn):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).sum().item()
    return test_loss / len(dataloader), correct / len(dataloader.dataset)


def main():
    train_dl = DataLoader(RandomShapes(1024, 0), batch_size=16, shuffle=True, num_workers=0)
    test_dl = DataLoader(RandomShapes(256, 1), batch_size=128, num_workers=0)
    model = SmallCNN()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.7)

    epochs = 75
    t0 = time.time()
    for t in range(epochs):
        logger = setup_logging(t)
        train(train_dl, model, loss_fn, optimizer, logger, t)
        val_loss, acc = test(test_dl, model, loss_fn)
        scheduler.step()
        if t % 10 == 0 or t == epochs - 1:
            logger.info(f"epoch {t+1}: val_loss={val_loss:.4f} acc={acc:.3f} "
                        f"lr={scheduler.get_last_lr()[0]:.2e} ({time.time()-t0:.1f}s)")


if __name__ == "__main__":
    main()
