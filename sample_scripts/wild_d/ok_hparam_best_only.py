# expect: no_leak
# holder: none
# pattern: hyper-parameter search runs trials in a multiprocessing Pool; each result carries a state_dict, but the parent keeps only the current best result and a few running counters
# step_ms: 300
"""Parallel random search for a small 1-D CNN classifier.

Trials are distributed over a ``multiprocessing.Pool`` of two workers.  Each
worker builds the (synthetic) dataset once in its initializer, and every task
trains a fresh model with SGD + momentum, evaluates it and ships back its
metrics *and* its ``state_dict``.

That looks like it should accumulate models in the parent, but the parent
only keeps ``best`` (replaced whenever a better trial arrives) plus a few
scalar statistics; older state dicts are dropped immediately.  The workers
create a new model per task and return nothing else, so they stay flat too.
"""
import math
import multiprocessing as mp
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

N_TRIALS = 64
SEQ_LEN = 64
N_CLASSES = 4
STEPS = 40

_DATA = None


def _make_data(seed=0, n=3000):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, N_CLASSES, (n,), generator=g)
    t = torch.linspace(0, 1, SEQ_LEN)
    freq = (y.float() + 1.0).unsqueeze(1) * 3.0
    x = torch.sin(2 * math.pi * freq * t + torch.rand(n, 1, generator=g) * 6.28)
    x = x + 2.0 * torch.randn(n, SEQ_LEN, generator=g)
    return x.unsqueeze(1), y


def _init_worker():
    global _DATA
    torch.set_num_threads(1)
    x, y = _make_data()
    _DATA = (x[:2500], y[:2500], x[2500:], y[2500:])


class SmallCNN(nn.Module):
    def __init__(self, channels, kernel, dropout):
        super().__init__()
        self.conv1 = nn.Conv1d(1, channels, kernel, padding=kernel // 2)
        self.conv2 = nn.Conv1d(channels, channels, kernel, padding=kernel // 2)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(channels, N_CLASSES)

    def forward(self, x):
        h = F.relu(self.conv1(x))
        h = F.max_pool1d(h, 2)
        h = F.relu(self.conv2(h))
        return self.head(self.drop(h.mean(-1)))


def run_trial(cfg):
    x_tr, y_tr, x_va, y_va = _DATA
    torch.manual_seed(cfg["seed"])
    model = SmallCNN(cfg["channels"], cfg["kernel"], cfg["dropout"])
    opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9, weight_decay=cfg["wd"])
    t0 = time.time()
    for _ in range(STEPS):
        idx = torch.randint(0, x_tr.shape[0], (cfg["batch"],))
        loss = F.cross_entropy(model(x_tr[idx]), y_tr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(x_va).argmax(1) == y_va).float().mean().item()
    return {"config": cfg, "val_acc": acc, "train_loss": loss.item(),
            "seconds": time.time() - t0, "state_dict": model.state_dict()}


def sample_configs(n, seed=0):
    rng = random.Random(seed)
    for i in range(n):
        yield {"trial": i, "seed": rng.randrange(10_000), "lr": 10 ** rng.uniform(-3, -0.5),
               "wd": 10 ** rng.uniform(-6, -3), "channels": rng.choice([16, 32, 48]),
               "kernel": rng.choice([3, 5, 7]), "dropout": rng.choice([0.0, 0.2]),
               "batch": rng.choice([32, 64, 128])}


def main():
    best = None
    n_done, acc_sum, total_seconds = 0, 0.0, 0.0
    t0 = time.time()
    with mp.Pool(processes=2, initializer=_init_worker) as pool:
        for res in pool.imap_unordered(run_trial, sample_configs(N_TRIALS)):
            n_done += 1
            acc_sum += res["val_acc"]
            total_seconds += res["seconds"]
            if best is None or res["val_acc"] > best["val_acc"]:
                best = res
            if n_done % 10 == 0:
                print(f"[{time.time() - t0:5.1f}s] {n_done:3d}/{N_TRIALS} trials  mean acc={acc_sum / n_done:.3f}  "
                      f"best={best['val_acc']:.3f} (trial {best['config']['trial']})")
    c = best["config"]
    n_params = sum(v.numel() for v in best["state_dict"].values())
    print(f"best trial {c['trial']}: acc={best['val_acc']:.3f} lr={c['lr']:.3g} channels={c['channels']} "
          f"kernel={c['kernel']} params={n_params}; worker time {total_seconds:.1f}s")


if __name__ == "__main__":
    main()
