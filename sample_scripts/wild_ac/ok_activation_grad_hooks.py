# expect: no_leak
# pattern: small ResNet-style CNN on synthetic 32x32 "traffic sign" images (torch.optim.SGD with Nesterov momentum, cosine LR, EMA weights copied once at start and updated in place, flip+shift TTA at evaluation every 150 steps, DataLoader num_workers=0 over an in-memory uint8 array, ~22 ms steps, code in main() + ActGradMonitor/ModelEMA classes); looks like a hook pile-up: every training forward calls act.register_hook(...) on each block's output to measure activation-gradient norms, so thousands of hooks are registered over the run and none is ever removed; but the hooks live on that step's non-leaf activation tensors, which are freed with the graph after backward, and each hook closure only captures the monitor and a layer index (not the tensor); the monitor writes into a preallocated (window x layers) numpy ring, the EMA is a fixed second copy of the weights, and TTA's 4x-batch temporaries are freed after each evaluation (memory swings, then returns)
# step_ms: 22
"""Traffic-sign style classifier with activation-gradient monitoring.

We wanted to see which block's activations get the largest gradients while the LR
decays (a vanishing-gradient check), so the model calls register_hook on its block
outputs during training forwards.
"""
import copy
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)

N_CLASSES = 16
RUN_SECONDS = 16.0


def make_signs(n, seed):
    """Coloured polygons/rings on cluttered backgrounds; class = shape x colour."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:32, 0:32]
    imgs = np.empty((n, 32, 32, 3), np.uint8)
    labels = rng.integers(N_CLASSES, size=n)
    palette = np.array([[220, 30, 30], [30, 60, 220], [240, 200, 20], [240, 240, 240]])
    for i in range(n):
        bg = rng.integers(40, 160, size=3) + rng.normal(0, 25, (32, 32, 3))
        shape, colour = divmod(int(labels[i]), 4)
        cy, cx = rng.uniform(12, 20, 2)
        r = rng.uniform(7, 11)
        d = np.hypot(yy - cy, xx - cx)
        if shape == 0:
            m = d < r
        elif shape == 1:
            m = (d < r) & (d > r * 0.6)
        elif shape == 2:
            m = (np.abs(yy - cy) + np.abs(xx - cx)) < r
        else:
            m = (np.abs(yy - cy) < r * 0.8) & (np.abs(xx - cx) < r * 0.8)
        bg[m] = palette[colour] + rng.normal(0, 15, 3)
        imgs[i] = np.clip(bg, 0, 255)
    return imgs, labels


class SignDS(Dataset):
    def __init__(self, imgs, labels, train):
        self.imgs, self.labels, self.train = imgs, labels, train

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = torch.from_numpy(self.imgs[i]).permute(2, 0, 1).float().div_(255)
        if self.train:
            dy, dx = np.random.randint(-3, 4, 2)
            x = torch.roll(x, (int(dy), int(dx)), (1, 2))
            x = x * (0.8 + 0.4 * torch.rand(3, 1, 1))
        return (x - 0.5) / 0.25, int(self.labels[i])


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.sc = nn.Sequential() if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + self.sc(x))


class ActGradMonitor:
    """Rolling window of per-block activation-gradient norms."""

    def __init__(self, n_layers, window=256):
        self.buf = np.zeros((window, n_layers), np.float32)
        self.step = 0
        self.window = window

    def make_hook(self, layer):
        def hook(grad):
            self.buf[self.step % self.window, layer] = grad.norm().item() / math.sqrt(grad.numel())
        return hook

    def tick(self):
        self.step += 1

    def summary(self):
        n = min(self.step, self.window)
        return self.buf[:n].mean(0)


class Net(nn.Module):
    def __init__(self, monitor=None):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.blocks = nn.ModuleList([Block(16, 16, 1), Block(16, 32, 2), Block(32, 48, 2), Block(48, 64, 1)])
        self.fc = nn.Linear(64, N_CLASSES)
        self.monitor = monitor

    def forward(self, x):
        x = self.stem(x)
        for i, blk in enumerate(self.blocks):
            x = blk(x)
            if self.monitor is not None and x.requires_grad:
                x.register_hook(self.monitor.make_hook(i))
        return self.fc(x.mean((2, 3)))


class ModelEMA:
    def __init__(self, model, decay=0.995):
        self.module = copy.deepcopy(model).eval()
        self.module.monitor = None
        for p in self.module.parameters():
            p.requires_grad_(False)
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        for e, m in zip(self.module.state_dict().values(), model.state_dict().values()):
            if e.dtype.is_floating_point:
                e.mul_(self.decay).add_(m, alpha=1 - self.decay)
            else:
                e.copy_(m)


@torch.no_grad()
def evaluate_tta(model, loader):
    model.eval()
    correct = n = 0
    conf = torch.zeros(N_CLASSES, N_CLASSES, dtype=torch.long)
    for x, y in loader:
        views = torch.cat([x, x.flip(3), torch.roll(x, 2, 3), torch.roll(x, -2, 2)])
        p = F.softmax(model(views), 1).view(4, len(x), -1).mean(0)
        pred = p.argmax(1)
        correct += (pred == y).sum().item()
        n += len(y)
        conf.index_put_((y, pred), torch.ones_like(y), accumulate=True)
    return correct / n, conf


def main():
    torch.manual_seed(0)
    np.random.seed(0)
    tr_x, tr_y = make_signs(12_000, 1)
    va_x, va_y = make_signs(1_500, 2)
    train_dl = DataLoader(SignDS(tr_x, tr_y, True), batch_size=64, shuffle=True, drop_last=True)
    val_dl = DataLoader(SignDS(va_x, va_y, False), batch_size=125)

    monitor = ActGradMonitor(n_layers=4)
    model = Net(monitor)
    ema = ModelEMA(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    total_steps = 1100
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total_steps) / total_steps)))

    t0 = time.time()
    step = 0
    done = False
    while not done:
        model.train()
        for x, y in train_dl:
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            ema.update(model)
            monitor.tick()
            step += 1
            if step % 150 == 0:
                acc, conf = evaluate_tta(ema.module, val_dl)
                worst = (conf.diag().float() / conf.sum(1).clamp(min=1)).argmin().item()
                g = monitor.summary()
                print(f"step {step} loss {loss.item():.3f} ema-tta acc {acc:.3f} worst cls {worst} "
                      f"act-grad {' '.join(f'{v:.2e}' for v in g)} ({time.time() - t0:.1f}s)", flush=True)
            if step >= total_steps or time.time() - t0 > RUN_SECONDS:
                done = True
                break
    acc, _ = evaluate_tta(ema.module, val_dl)
    print(f"final ema tta acc {acc:.3f} after {step} steps")


if __name__ == "__main__":
    main()
