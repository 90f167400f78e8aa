# expect: no_leak
# pattern: noisy-label hunting on a 300k-row synthetic tabular dataset (MLP, torch.optim.AdamW with OneCycleLR, ~6 ms steps of 1024 rows, manual index batching, code in main() + a TrainingDynamics class, churn curve plotted with matplotlib and closed at the end); looks like an ever-growing per-epoch history: TrainingDynamics.probs_by_epoch is a dict keyed by epoch that receives a new (N x C) float32 array of the softmax outputs seen during every training epoch (~12 MB each), plus a per-sample forgetting counter and a per-epoch list of churn floats; but end_epoch() deletes every epoch older than the WINDOW=4 most recent ones (the label-noise score only averages the last epochs), so the dict fills during the first four epochs (~48 MB, about the first 40% of the run) and then stays at four arrays; the counters are preallocated and the churn list only gains one float per epoch
# step_ms: 6
"""Flag probably-mislabelled rows from training dynamics (confidence / variability /
forgetting events), Kaggle tabular-playground style."""
import time
from collections import defaultdict

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

N, D, C = 300_000, 32, 10
NOISE_RATE = 0.08
WINDOW = 4
BS = 1024
RUN_SECONDS = 16.0


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 1.1, (C, D))
    y_true = rng.integers(C, size=N)
    X = centers[y_true] + rng.normal(0, 1.6, (N, D))
    X[:, :4] = np.tanh(X[:, :4])                   # a few squashed features
    y = y_true.copy()
    flip = rng.random(N) < NOISE_RATE
    y[flip] = rng.integers(C, size=flip.sum())
    return X.astype(np.float32), y, flip & (y != y_true)


class TrainingDynamics:
    """Per-sample gold-label probabilities over recent epochs + forgetting events."""

    def __init__(self, n, n_classes, window):
        self.window = window
        self.probs_by_epoch = {}
        self.prev_correct = np.zeros(n, bool)
        self.forgets = np.zeros(n, np.int16)
        self.churn = []
        self._cur = None

    def start_epoch(self, epoch):
        self.epoch = epoch
        self._cur = np.full((len(self.forgets), C), np.nan, np.float32)
        self.probs_by_epoch[epoch] = self._cur

    def record(self, idx, probs):
        self._cur[idx] = probs

    def end_epoch(self, labels):
        cur = self._cur
        pred = cur.argmax(1)
        correct = pred == labels
        self.forgets += (self.prev_correct & ~correct).astype(np.int16)
        prev = self.probs_by_epoch.get(self.epoch - 1)
        if prev is not None:
            self.churn.append(float((prev.argmax(1) != pred).mean()))
        self.prev_correct = correct
        for e in [e for e in self.probs_by_epoch if e <= self.epoch - self.window]:
            del self.probs_by_epoch[e]

    def scores(self, labels):
        gold = np.stack([p[np.arange(len(labels)), labels] for p in self.probs_by_epoch.values()])
        conf = gold.mean(0)
        var = gold.std(0)
        return conf, var


def main():
    torch.manual_seed(0)
    X, y, is_noisy = make_data()
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    model = nn.Sequential(nn.Linear(D, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, C))
    steps_per_epoch = N // BS
    max_epochs = 40
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps_per_epoch * max_epochs)
    dyn = TrainingDynamics(N, C, WINDOW)
    log = defaultdict(list)
    t0 = time.time()
    for epoch in range(max_epochs):
        dyn.start_epoch(epoch)
        perm = torch.randperm(N)
        ep_loss = 0.0
        for b in range(steps_per_epoch):
            idx = perm[b * BS:(b + 1) * BS]
            logits = model(Xt[idx])
            loss = F.cross_entropy(logits, yt[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            dyn.record(idx.numpy(), F.softmax(logits.detach(), 1).numpy())
            ep_loss += loss.item()
        dyn.end_epoch(y)
        conf, var = dyn.scores(y)
        flagged = conf < 0.2
        prec = (flagged & is_noisy).sum() / max(flagged.sum(), 1)
        rec = (flagged & is_noisy).sum() / is_noisy.sum()
        log["loss"].append(ep_loss / steps_per_epoch)
        log["precision"].append(prec)
        log["recall"].append(rec)
        print(f"epoch {epoch:2d} loss {log['loss'][-1]:.3f} churn {dyn.churn[-1] if dyn.churn else float('nan'):.4f} "
              f"flagged {flagged.sum():6d} P {prec:.3f} R {rec:.3f} window {len(dyn.probs_by_epoch)} "
              f"({time.time() - t0:.1f}s)", flush=True)
        if time.time() - t0 > RUN_SECONDS:
            break

    fig, ax = plt.subplots(1, 2, figsize=(8, 3))
    ax[0].plot(dyn.churn); ax[0].set_title("prediction churn")
    ax[1].plot(log["precision"], label="P"); ax[1].plot(log["recall"], label="R"); ax[1].legend()
    fig.savefig("/tmp/noisy_label_dynamics.png")
    plt.close(fig)
    order = np.argsort(conf)
    print("top suspicious rows:", order[:10].tolist(), "actually noisy:", is_noisy[order[:10]].tolist())


if __name__ == "__main__":
    main()
