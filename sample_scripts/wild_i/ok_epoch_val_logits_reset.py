# expect: no_leak
# pattern: Trainer keeps self.val_logits / self.val_targets lists on the object and appends every validation batch's logits, but validate() rebinds them to fresh lists at the start of each pass and clears them after torch.cat + metrics; per-epoch train predictions are a local list concatenated and dropped on return, and the only thing kept across epochs is a small dict of floats per epoch -- memory is a bounded sawtooth
# step_ms: 10
"""Multi-class tabular classifier with full-pass validation metrics.

Validation metrics that are not decomposable per batch (expected
calibration error, macro recall, top-5 accuracy on the whole set) need all
logits at once, so the trainer collects the logits of every validation
batch and concatenates them at the end of the pass.  Training accuracy is
computed the same way from the argmax of each batch.
"""
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.set_num_threads(1)
torch.manual_seed(0)

IN_DIM = 64
N_CLASSES = 100
EPOCHS = 10


def make_split(n, proto, g):
    y = torch.randint(0, N_CLASSES, (n,), generator=g)
    x = proto[y] + 2.5 * torch.randn(n, IN_DIM, generator=g)
    return TensorDataset(x, y)


def expected_calibration_error(probs, targets, n_bins=15):
    conf, pred = probs.max(1)
    acc = (pred == targets).float()
    edges = torch.linspace(0, 1, n_bins + 1)
    ece = torch.zeros(())
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (conf > lo) & (conf <= hi)
        if m.any():
            ece += m.float().mean() * (conf[m].mean() - acc[m].mean()).abs()
    return ece.item()


class Trainer:
    def __init__(self, model, train_loader, val_loader):
        self.model = model
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
        self.val_logits = []
        self.val_targets = []
        self.history = []

    def train_epoch(self):
        self.model.train()
        epoch_preds, epoch_targets = [], []
        for x, y in self.train_loader:
            logits = self.model(x)
            loss = F.cross_entropy(logits, y)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            epoch_preds.append(logits.detach().argmax(1))
            epoch_targets.append(y)
        preds = torch.cat(epoch_preds)
        targets = torch.cat(epoch_targets)
        return (preds == targets).float().mean().item()

    @torch.no_grad()
    def validate(self):
        self.model.eval()
        self.val_logits, self.val_targets = [], []
        for x, y in self.val_loader:
            self.val_logits.append(self.model(x))
            self.val_targets.append(y)
        logits = torch.cat(self.val_logits)
        targets = torch.cat(self.val_targets)
        self.val_logits.clear()
        self.val_targets.clear()
        probs = logits.softmax(1)
        top5 = (logits.topk(5, dim=1).indices == targets[:, None]).any(1).float().mean().item()
        recall = torch.zeros(N_CLASSES)
        pred = logits.argmax(1)
        for c in range(N_CLASSES):
            m = targets == c
            if m.any():
                recall[c] = (pred[m] == c).float().mean()
        return {
            "nll": F.cross_entropy(logits, targets).item(),
            "acc": (pred == targets).float().mean().item(),
            "top5": top5,
            "macro_recall": recall.mean().item(),
            "ece": expected_calibration_error(probs, targets),
        }

    def fit(self, epochs):
        t0 = time.time()
        for epoch in range(epochs):
            train_acc = self.train_epoch()
            metrics = self.validate()
            metrics.update(epoch=epoch, train_acc=train_acc)
            self.history.append(metrics)
            print(f"epoch {epoch} train_acc {train_acc:.3f} val_acc {metrics['acc']:.3f} "
                  f"top5 {metrics['top5']:.3f} ece {metrics['ece']:.3f} "
                  f"({time.time() - t0:.1f}s)", flush=True)


def main():
    g = torch.Generator().manual_seed(0)
    proto = torch.randn(N_CLASSES, IN_DIM, generator=g)
    train_ds = make_split(40_000, proto, g)
    val_ds = make_split(20_000, proto, g)
    train_loader = DataLoader(train_ds, batch_size=256, shuffle=True)
    val_loader = DataLoader(val_ds, batch_size=1024)
    model = nn.Sequential(nn.Linear(IN_DIM, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, N_CLASSES))
    trainer = Trainer(model, train_loader, val_loader)
    trainer.fit(EPOCHS)
    best = max(trainer.history, key=lambda m: m["acc"])
    print(f"best epoch {best['epoch']} val_acc {best['acc']:.3f}")


if __name__ == "__main__":
    main()
