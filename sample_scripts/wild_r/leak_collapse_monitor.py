# expect: leak
# holder: monitor._pending|CollapseMonitor._pending|self._pending
# pattern: notebook-converted 1D-CNN vibration-fault classifier (torch.optim.AdamW, top-level training loop, no main()) with a CollapseMonitor that stores every step's detached float32 penultimate embeddings + labels in self._pending and every 40 steps reduces them to neural-collapse statistics (class-mean cosine, within/between variance ratio); its reset() is written `self._pending.clear` without the call parentheses, a no-op attribute access, so the list keeps every step's embedding batch (128x128 float32, ~64 KB/step) and the statistics silently become cumulative
# step_ms: 25
"""Vibration-fault classifier with a neural-collapse monitor.

Converted from the exploration notebook: cells are kept as top-level code.
Synthetic accelerometer windows (3 axes, 256 samples) for 8 fault classes:
each class is a mix of characteristic harmonics plus bearing-defect
impulses, with per-window speed jitter and sensor noise.
"""
import logging
import math
import time
from collections import defaultdict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
log = logging.getLogger("vibe")

torch.manual_seed(0)
rng = np.random.default_rng(7)

# ---------------------------------------------------------------- config cell
N_CLASSES = 8
WIN = 256
BATCH = 128
STEPS = 880
MONITOR_EVERY = 40
EMB_DIM = 128
LR = 2e-3

# class signatures: base harmonics, impulse rate, impulse decay
HARMONICS = rng.uniform(0.02, 0.2, size=(N_CLASSES, 3))
IMPULSE_RATE = rng.uniform(0.0, 0.05, size=N_CLASSES)
DECAY = rng.uniform(0.05, 0.3, size=N_CLASSES)
t_axis = np.arange(WIN, dtype=np.float32)


def synth_batch(n):
    y = rng.integers(0, N_CLASSES, size=n)
    speed = rng.uniform(0.85, 1.15, size=(n, 1, 1)).astype(np.float32)
    ph = rng.uniform(0, 2 * np.pi, size=(n, 3, 1)).astype(np.float32)
    f = HARMONICS[y][:, :, None].astype(np.float32) * speed
    x = np.sin(2 * np.pi * f * t_axis[None, None, :] + ph)
    # bearing impulses: sparse spikes convolved with an exponential decay
    spikes = (rng.random((n, 1, WIN)) < IMPULSE_RATE[y][:, None, None]).astype(np.float32)
    kern = np.exp(-DECAY[y][:, None] * np.arange(24)[None, :]).astype(np.float32)
    imp = np.stack([np.convolve(spikes[i, 0], kern[i])[:WIN] for i in range(n)])[:, None, :]
    x = x + 1.5 * imp + 0.3 * rng.standard_normal((n, 3, WIN)).astype(np.float32)
    x -= x.mean(axis=2, keepdims=True)
    x /= x.std(axis=2, keepdims=True) + 1e-5
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)


# ---------------------------------------------------------------- model cell
class FaultNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(3, 16, 9, stride=2, padding=4), nn.BatchNorm1d(16), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(16, 32, 5, padding=2), nn.BatchNorm1d(32), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(32, 64, 3, padding=1), nn.BatchNorm1d(64), nn.ReLU(),
        )
        self.proj = nn.Linear(64, EMB_DIM)
        self.head = nn.Linear(EMB_DIM, N_CLASSES)

    def forward(self, x):
        h = self.conv(x).mean(dim=2)
        z = F.relu(self.proj(h))
        return self.head(z), z


# ---------------------------------------------------------------- monitor cell
class CollapseMonitor:
    """Tracks Papyan et al. neural-collapse statistics on recent training batches."""

    def __init__(self, n_classes):
        self.n_classes = n_classes
        self._pending = []
        self.history = defaultdict(list)

    def observe(self, z, y):
        self._pending.append((z.detach().numpy().copy(), y.numpy().copy()))

    def reset(self):
        self._pending.clear

    def summarize(self, step):
        if not self._pending:
            return None
        # two passes over the stored batches: class means, then within-class scatter
        sums = np.zeros((self.n_classes, EMB_DIM))
        counts = np.zeros(self.n_classes)
        for z, y in self._pending:
            np.add.at(sums, y, z)
            counts += np.bincount(y, minlength=self.n_classes)
        n = counts.sum()
        mu_g = sums.sum(axis=0) / n
        means = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], mu_g)
        centred = means - mu_g
        within = 0.0
        for z, y in self._pending:
            d = z - means[y]
            within += float(np.einsum("ij,ij->", d, d))
        within /= n
        between = float((centred * centred).sum(axis=1).mean()) + 1e-8
        unit = centred / (np.linalg.norm(centred, axis=1, keepdims=True) + 1e-8)
        cos = unit @ unit.T
        off = cos[~np.eye(self.n_classes, dtype=bool)]
        stats = {"nc1": within / between, "cos_mean": float(off.mean()),
                 "cos_std": float(off.std()), "n": int(n)}
        for k, v in stats.items():
            self.history[k].append((step, v))
        self.reset()
        return stats


# ---------------------------------------------------------------- training cell
model = FaultNet()
opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=1e-4)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=LR, total_steps=STEPS, pct_start=0.15)
monitor = CollapseMonitor(N_CLASSES)
x_val, y_val = synth_batch(1024)

running = 0.0
t0 = time.perf_counter()
for step in range(1, STEPS + 1):
    xb, yb = synth_batch(BATCH)
    model.train()
    logits, z = model(xb)
    loss = F.cross_entropy(logits, yb, label_smoothing=0.05)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 2.0)
    opt.step()
    sched.step()
    monitor.observe(z, yb)
    running = 0.9 * running + 0.1 * loss.item() if step > 1 else loss.item()

    if step % MONITOR_EVERY == 0:
        stats = monitor.summarize(step)
        model.eval()
        with torch.no_grad():
            acc = (model(x_val)[0].argmax(1) == y_val).float().mean().item()
        log.info("step %4d  loss %.3f  val_acc %.3f  nc1 %.3f  cos %.3f  (%.1f ms/step)",
                 step, running, acc, stats["nc1"], stats["cos_mean"],
                 1000 * (time.perf_counter() - t0) / step)

# ---------------------------------------------------------------- report cell
etf_target = -1.0 / (N_CLASSES - 1)
final_cos = monitor.history["cos_mean"][-1][1]
log.info("final class-mean cosine %.3f (simplex ETF target %.3f), |gap| %.3f",
         final_cos, etf_target, abs(final_cos - etf_target))
log.info("nc1 trajectory: %s", ", ".join("%.2f" % v for _, v in monitor.history["nc1"][::3]))
print("done in %.1fs" % (time.perf_counter() - t0), "ok" if math.isfinite(running) else "nan")
