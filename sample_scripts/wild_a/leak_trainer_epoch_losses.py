# expect: leak
# holder: epoch_losses|trainer.epoch_losses
# pattern: Trainer.train_epoch returns a method-local list of per-step loss tensors (graph attached) that fit() extends into self.epoch_losses
# step_ms: 6
"""Small CNN classifier on synthetic 'blob' images, driven by a Trainer class.

train_epoch() gathers the loss of every step in a local list and hands it back;
fit() extends self.epoch_losses with it so a loss curve can be plotted after
training.  The entries are the raw loss tensors, so each one keeps its autograd
graph (grad_fn nodes, BatchNorm buffers, ...) alive for the whole run: memory
grows by roughly 20 KB per step.
Fix: `losses.append(loss.item())` (or loss.detach().cpu()).
"""
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    epochs: int = 12
    steps_per_epoch: int = 250
    batch_size: int = 32
    image_size: int = 16
    num_classes: int = 10
    lr: float = 2e-3
    seed: int = 0


class BlobDataset:
    """Gaussian blobs whose position encodes the class."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        g = torch.Generator().manual_seed(cfg.seed)
        s = cfg.image_size
        yy, xx = torch.meshgrid(torch.arange(s), torch.arange(s), indexing="ij")
        centers = torch.rand(cfg.num_classes, 2, generator=g) * (s - 4) + 2
        self.templates = torch.stack([
            torch.exp(-((yy - c[0]) ** 2 + (xx - c[1]) ** 2) / 6.0) for c in centers
        ])  # (C, s, s)
        self.g = g

    def batch(self):
        cfg = self.cfg
        y = torch.randint(0, cfg.num_classes, (cfg.batch_size,), generator=self.g)
        base = self.templates[y].unsqueeze(1).expand(-1, 3, -1, -1)
        x = base + 0.3 * torch.randn(base.shape, generator=self.g)
        return x, y


class SmallCNN(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


class Trainer:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.data = BlobDataset(cfg)
        self.model = SmallCNN(cfg.num_classes)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
            self.optimizer, T_max=cfg.epochs * cfg.steps_per_epoch)
        self.epoch_losses = []
        self.epoch_acc = []

    def train_epoch(self, epoch):
        self.model.train()
        losses = []
        correct = 0
        seen = 0
        for step in range(self.cfg.steps_per_epoch):
            x, y = self.data.batch()
            logits = self.model(x)
            loss = F.cross_entropy(logits, y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()
            losses.append(loss)
            correct += (logits.argmax(1) == y).sum().item()
            seen += y.numel()
        self.epoch_acc.append(correct / seen)
        return losses

    def fit(self):
        t0 = time.time()
        for epoch in range(self.cfg.epochs):
            self.epoch_losses.extend(self.train_epoch(epoch))
            recent = torch.stack(self.epoch_losses[-self.cfg.steps_per_epoch:]).mean()
            print(f"epoch {epoch:2d}  loss {recent.item():.4f}  acc {self.epoch_acc[-1]:.3f}"
                  f"  ({time.time() - t0:.1f}s)", flush=True)
        return self.epoch_losses


def main():
    torch.set_num_threads(1)
    cfg = Config()
    torch.manual_seed(cfg.seed)
    trainer = Trainer(cfg)
    curve = trainer.fit()
    print(f"done: {len(curve)} steps, final loss {curve[-1].item():.4f}")


if __name__ == "__main__":
    main()
