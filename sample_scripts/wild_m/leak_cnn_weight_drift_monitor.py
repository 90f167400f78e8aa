# expect: leak
# holder: optimizer._optimizer_step_post_hooks|anchor|monitor._handle
# pattern: WeightDriftMonitor.start_epoch() registers a new optimizer.register_step_post_hook closure every epoch that captures `anchor`, a detached clone of every weight matrix at the start of that epoch; the returned handle is just overwritten in self._handle and never .remove()d, so the optimizer's _optimizer_step_post_hooks dict keeps every epoch's closure and its full weight snapshot (~9 MB per epoch; stale hooks return early, so training speed is unaffected) (torch.optim.AdamW)
# step_ms: 65
"""Small CNN on a synthetic 10-class texture dataset, with weight-drift monitoring.

Besides the usual loss/accuracy, the trainer reports how far every weight
matrix has moved (relative L2 distance) since the beginning of the current
epoch.  Layers that stop moving early are a good hint that the learning-rate
schedule is off, so the drift numbers are printed together with the epoch
summary.
"""
import argparse
import itertools
import math
import time

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F


def make_texture_dataset(n, seed, size=32, n_classes=10):
    """Oriented sinusoidal gratings + colour noise; class = orientation/frequency bucket."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    labels = rng.integers(0, n_classes, n)
    theta = labels * (math.pi / n_classes) + rng.normal(0, 0.08, n)
    freq = 3 + (labels % 3) * 2 + rng.normal(0, 0.3, n)
    phase = rng.uniform(0, 2 * math.pi, n)
    proj = np.cos(theta)[:, None, None] * xx + np.sin(theta)[:, None, None] * yy
    base = np.sin(2 * math.pi * freq[:, None, None] * proj + phase[:, None, None])
    colour = rng.uniform(0.5, 1.0, (n, 3, 1, 1))
    imgs = base[:, None] * colour + rng.normal(0, 0.6, (n, 3, size, size))
    return torch.tensor(imgs, dtype=torch.float32), torch.tensor(labels)


class TextureNet(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * 8 * 8, 768)
        self.fc2 = nn.Linear(768, n_classes)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.conv3(x))
        x = self.drop(F.relu(self.fc1(x.flatten(1))))
        return self.fc2(x)


class WeightDriftMonitor:
    """Relative distance of every weight matrix from its value at epoch start."""

    def __init__(self, model, optimizer, every=10):
        self.model = model
        self.optimizer = optimizer
        self.every = every
        self.epoch = None
        self.history = []
        self._handle = None

    def start_epoch(self, epoch):
        self.epoch = epoch
        anchor = {name: p.detach().clone()
                  for name, p in self.model.named_parameters() if p.dim() > 1}
        counter = itertools.count(1)

        def _after_step(optimizer, args, kwargs):
            if self.epoch != epoch:
                return
            n = next(counter)
            if n % self.every:
                return
            with torch.no_grad():
                drift = {}
                for name, p in self.model.named_parameters():
                    if name in anchor:
                        ref = anchor[name]
                        drift[name] = ((p - ref).norm() / (ref.norm() + 1e-12)).item()
            self.history.append((epoch, n, drift))

        self._handle = self.optimizer.register_step_post_hook(_after_step)

    def epoch_summary(self):
        rows = [d for e, _, d in self.history if e == self.epoch]
        if not rows:
            return "n/a"
        last = rows[-1]
        return "  ".join(f"{k.split('.')[0]}={v:.3f}" for k, v in last.items())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=11)
    parser.add_argument("--train-size", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    x_train, y_train = make_texture_dataset(args.train_size, args.seed)
    x_val, y_val = make_texture_dataset(512, args.seed + 1)

    model = TextureNet()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    monitor = WeightDriftMonitor(model, optimizer, every=5)

    t0 = time.time()
    for epoch in range(1, args.epochs + 1):
        monitor.start_epoch(epoch)
        model.train()
        perm = torch.randperm(args.train_size)
        total, correct, loss_sum = 0, 0, 0.0
        for i in range(0, args.train_size, args.batch_size):
            idx = perm[i:i + args.batch_size]
            xb, yb = x_train[idx], y_train[idx]
            if torch.rand(()) < 0.5:
                xb = xb.flip(3)
            logits = model(xb)
            loss = F.cross_entropy(logits, yb, label_smoothing=0.05)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss_sum += loss.item() * len(idx)
            correct += (logits.argmax(1) == yb).sum().item()
            total += len(idx)
        scheduler.step()

        model.eval()
        val_correct = 0
        with torch.no_grad():
            for xv, yv in zip(x_val.split(128), y_val.split(128)):
                val_correct += (model(xv).argmax(1) == yv).sum().item()
        val_acc = val_correct / len(y_val)
        if epoch % 2 == 0 or epoch == 1:
            print(f"epoch {epoch:3d}  loss {loss_sum / total:.3f}  train acc {correct / total:.3f}  "
                  f"val acc {val_acc:.3f}  drift[{monitor.epoch_summary()}]  "
                  f"{time.time() - t0:.1f}s", flush=True)

    print(f"finished {args.epochs} epochs in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
