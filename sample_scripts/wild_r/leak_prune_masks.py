# expect: leak
# holder: model.fc1.parametrizations.weight|model.fc2.parametrizations.weight|layer.parametrizations|parametrizations
# pattern: gradual magnitude pruning of a 3-layer MLP on synthetic low-rank teacher data (torch.optim.SGD with Nesterov momentum); every 16 steps prune_round() computes a tighter magnitude mask per layer and applies it with torch.nn.utils.parametrize.register_parametrization(layer, "weight", MagnitudeMask(mask)), assuming that re-registering replaces the old mask; it appends to the ParametrizationList instead, so each layer's `parametrizations.weight` keeps every round's full-size float32 mask buffer (~3 MB per round for fc1+fc2+fc3) and forward multiplies through all of them (the masks are nested, so the result and the reported sparsity are still correct and only the step time creeps up)
# step_ms: 30
"""Gradual magnitude pruning (Zhu & Gupta style) of an MLP on a teacher task.

The student is trained on labels produced by a fixed random teacher network
acting on low-rank Gaussian inputs; every PRUNE_EVERY steps another fraction
of the remaining weights is masked out by magnitude, layer by layer.
"""
import functools
import itertools
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parametrize


@dataclass(frozen=True)
class Config:
    d_in: int = 1024
    hidden: int = 512
    n_classes: int = 20
    batch: int = 384
    steps: int = 480
    prune_every: int = 16
    prune_frac: float = 0.08  # of the remaining weights, per round
    lr: float = 0.05
    seed: int = 0


cfg = Config()
torch.manual_seed(cfg.seed)


# ------------------------------------------------------------------ data
class TeacherTask:
    def __init__(self, cfg, rank=48):
        g = torch.Generator().manual_seed(123)
        self.basis = torch.randn(rank, cfg.d_in, generator=g) / rank ** 0.5
        self.t1 = torch.randn(cfg.d_in, 256, generator=g) / cfg.d_in ** 0.5
        self.t2 = torch.randn(256, cfg.n_classes, generator=g) / 16.0
        self.rank = rank
        self.g = torch.Generator().manual_seed(cfg.seed + 1)

    def batch(self, n):
        z = torch.randn(n, self.rank, generator=self.g)
        x = z @ self.basis + 0.1 * torch.randn(n, self.basis.shape[1], generator=self.g)
        with torch.no_grad():
            y = (torch.tanh(x @ self.t1) @ self.t2).argmax(dim=1)
        return x, y


# ------------------------------------------------------------------ model + pruning
class MagnitudeMask(nn.Module):
    def __init__(self, mask):
        super().__init__()
        self.register_buffer("mask", mask)

    def forward(self, w):
        return w * self.mask


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_in, cfg.hidden)
        self.fc2 = nn.Linear(cfg.hidden, cfg.hidden)
        self.fc3 = nn.Linear(cfg.hidden, cfg.n_classes)
        self.norm1 = nn.LayerNorm(cfg.hidden)
        self.norm2 = nn.LayerNorm(cfg.hidden)

    def forward(self, x):
        h = F.gelu(self.norm1(self.fc1(x)))
        h = F.gelu(self.norm2(self.fc2(h)))
        return self.fc3(h)

    def prunable(self):
        return [self.fc1, self.fc2, self.fc3]


def sparsity(layer):
    w = layer.weight  # parametrized: masked weight
    return float((w == 0).float().mean())


@torch.no_grad()
def prune_round(model, frac):
    for layer in model.prunable():
        w = layer.weight.abs()
        alive = w[w > 0]
        k = int(frac * alive.numel())
        if k == 0:
            continue
        thresh = alive.kthvalue(k).values
        mask = (w > thresh).to(w.dtype)
        parametrize.register_parametrization(layer, "weight", MagnitudeMask(mask))


@functools.lru_cache(maxsize=None)
def eval_set(n=4096):
    return task.batch(n)


def evaluate(model):
    x, y = eval_set()
    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    model.train()
    return acc


task = TeacherTask(cfg)
model = MLP(cfg)
opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9, nesterov=True, weight_decay=5e-5)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.steps, eta_min=cfg.lr * 0.05)

losses = []
t0 = time.perf_counter()
t_win = t0
for step in itertools.count(1):
    if step > cfg.steps:
        break
    x, y = task.batch(cfg.batch)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    sched.step()
    losses.append(loss.item())

    if step % cfg.prune_every == 0:
        prune_round(model, cfg.prune_frac)
    if step % 48 == 0:
        now = time.perf_counter()
        sp = " ".join(f"{sparsity(l):.2f}" for l in model.prunable())
        print(f"step {step:4d}  loss {sum(losses[-48:]) / 48:.3f}  acc {evaluate(model):.3f}  "
              f"sparsity [{sp}]  {1000 * (now - t_win) / 48:.1f} ms/step", flush=True)
        t_win = now

print(f"final: acc {evaluate(model):.3f}, total {time.perf_counter() - t0:.1f}s")
