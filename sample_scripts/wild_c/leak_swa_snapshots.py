# expect: leak
# holder: swa_snapshots|snapshots
# pattern: every epoch a deep copy of model.state_dict() is appended to a list "to average for SWA at the end"; the list keeps one full copy of the weights per epoch
# step_ms: 200
"""Small ResNet on random 3x96x96 images, cosine LR, manual SWA at the end.

Instead of ``torch.optim.swa_utils.AveragedModel`` (which keeps a running
average, i.e. one extra copy), the script stores
``copy.deepcopy(model.state_dict())`` after every epoch in ``swa_snapshots``
and averages them after training.  Every epoch adds a full copy of all
weights and BatchNorm buffers, and nothing is ever dropped.

(Storing ``model.state_dict()`` without copying would not grow memory --
those are references to the live parameters -- but it would also silently
make every "snapshot" equal to the final weights.)

Fix: keep a running average (``AveragedModel`` / ``update_parameters``) or
accumulate a sum in place with a counter.
"""
import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.set_num_threads(1)
torch.manual_seed(0)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = nn.Sequential()
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.short(x))


class SmallResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.layer1 = BasicBlock(16, 32, 2)
        self.layer2 = BasicBlock(32, 64, 2)
        self.layer3 = BasicBlock(64, 128, 2)
        self.pool = nn.AdaptiveAvgPool2d(4)
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(128 * 4 * 4, 1024), nn.ReLU(),
                                        nn.Linear(1024, num_classes))

    def forward(self, x):
        x = self.layer3(self.layer2(self.layer1(self.stem(x))))
        return self.classifier(self.pool(x))


def train_one_epoch(model, loader, optimizer, criterion):
    model.train()
    running, n = 0.0, 0
    for images, labels in loader:
        optimizer.zero_grad()
        outputs = model(images)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        running += loss.item() * images.size(0)
        n += images.size(0)
    return running / n


@torch.no_grad()
def validate(model, loader, criterion):
    model.eval()
    correct, total, loss_sum = 0, 0, 0.0
    for images, labels in loader:
        out = model(images)
        loss_sum += criterion(out, labels).item() * images.size(0)
        correct += (out.argmax(1) == labels).sum().item()
        total += labels.size(0)
    return loss_sum / total, correct / total


def average_state_dicts(sds):
    avg = {}
    for k in sds[0]:
        if sds[0][k].is_floating_point():
            avg[k] = sum(sd[k] for sd in sds) / len(sds)
        else:
            avg[k] = sds[-1][k]
    return avg


def main():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(320, 3, 96, 96, generator=g)
    y = torch.randint(0, 10, (320,), generator=g)
    x += 0.5 * y.float().view(-1, 1, 1, 1) / 10   # weak signal
    train_loader = DataLoader(TensorDataset(x[:256], y[:256]), batch_size=64, shuffle=True, num_workers=0)
    val_loader = DataLoader(TensorDataset(x[256:], y[256:]), batch_size=64, num_workers=0)

    model = SmallResNet()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    num_epochs = 20
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=num_epochs)

    swa_snapshots = []
    t0 = time.time()
    for epoch in range(num_epochs):
        tr_loss = train_one_epoch(model, train_loader, optimizer, criterion)
        val_loss, val_acc = validate(model, val_loader, criterion)
        scheduler.step()
        swa_snapshots.append(copy.deepcopy(model.state_dict()))
        print(f"epoch {epoch+1:2d} train_loss {tr_loss:.3f} val_loss {val_loss:.3f} "
              f"val_acc {val_acc:.2f} lr {scheduler.get_last_lr()[0]:.4f} ({time.time()-t0:.1f}s)")

    model.load_state_dict(average_state_dicts(swa_snapshots[num_epochs // 2:]))
    val_loss, val_acc = validate(model, val_loader, criterion)
    print(f"SWA model: val_loss {val_loss:.3f} val_acc {val_acc:.2f}")


if __name__ == "__main__":
    main()
