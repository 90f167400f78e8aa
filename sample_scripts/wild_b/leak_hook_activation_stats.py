# expect: leak
# holder: act_stats|ActivationMonitor
# pattern: forward hooks record a tuple of summary floats for every ReLU layer on every step into lists that are only summarised at the end (slow leak, about 1 KB per step)
# step_ms: 2
"""Dead-ReLU monitoring on an MLP trained on a synthetic two-spirals dataset.

``ActivationMonitor`` registers forward hooks that append a tuple of summary
statistics (firing rate, dead fraction, mean, std, max) for every ReLU layer to
``self.act_stats[name]`` on every forward pass. Nothing is ever dropped; only
the last few entries are inspected per print. The leak is slow (well under 1 KB
per step) but lasts the whole run.
Fix: keep a running mean (or a deque(maxlen=...)) instead of every step's tensor.
"""
import math
import time
from collections import defaultdict
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(13)


def two_spirals(n):
    t = torch.rand(n) * 3 * math.pi + 0.5
    lab = torch.randint(0, 2, (n,))
    sign = lab * 2 - 1
    x = torch.stack([sign * t * torch.cos(t), sign * t * torch.sin(t)], 1) / 10
    return x + 0.02 * torch.randn_like(x), lab


class ActivationMonitor:
    def __init__(self, model):
        self.act_stats = defaultdict(list)
        self.handles = []
        for name, mod in model.named_modules():
            if isinstance(mod, nn.ReLU):
                self.handles.append(mod.register_forward_hook(self._make_hook(name)))

    def _make_hook(self, name):
        def hook(module, inp, out):
            with torch.no_grad():
                alive = (out > 0).float()
                stats = torch.stack([alive.mean(), (alive.sum(0) == 0).float().mean(),
                                     out.mean(), out.std(), out.max()])
            self.act_stats[name].append(tuple(stats.tolist()))
        return hook

    def dead_fraction(self, last=50):
        # fraction of units that did not fire for any sample of the batch
        return {name: sum(v[1] for v in vals[-last:]) / len(vals[-last:])
                for name, vals in self.act_stats.items()}


model = nn.Sequential(
    nn.Linear(2, 128), nn.ReLU(),
    nn.Linear(128, 128), nn.ReLU(),
    nn.Linear(128, 96), nn.ReLU(),
    nn.Linear(96, 64), nn.ReLU(),
    nn.Linear(64, 2),
)
monitor = ActivationMonitor(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x_val, y_val = two_spirals(2000)

t0 = time.time()
last = t0
step = 0
while time.time() - t0 < 17.0:
    xb, yb = two_spirals(256)
    loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    step += 1
    if time.time() - last > 4:
        last = time.time()
        with torch.no_grad():
            acc = (model(x_val).argmax(1) == y_val).float().mean().item()
        dead = monitor.dead_fraction()
        print(f"step {step:6d} loss {loss.item():.3f} val_acc {acc:.3f} dead "
              + " ".join(f"{k}:{v:.2f}" for k, v in dead.items()))

print(f"{step} steps, {1000 * (time.time() - t0) / step:.2f} ms/step")
