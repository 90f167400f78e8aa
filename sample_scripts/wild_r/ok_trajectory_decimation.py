# expect: no_leak
# pattern: MLP that regresses clean DCT coefficients from noisy 1-D signals (torch.optim.SGD + momentum, slow ~130 ms steps) with a TrajectoryRecorder for loss-landscape style PCA of the weight trajectory: every `stride` steps a float32 copy of all weights (~4 MB, torch.cat of the detached parameters) is appended to self.snapshots, and when the list reaches capacity 24 it is decimated in place (keep every other snapshot) and the stride doubles, so the history climbs to ~95 MB over the first third of the run, halves, climbs back to the same cap and halves again: a bounded sawtooth whose peak never rises
# step_ms: 130
"""Weight-trajectory PCA for a spectral denoising MLP.

Notebook export.  The recorder keeps a compacted history of flattened
weights (uniformly spaced in step count) so that the trajectory can be
projected onto its top principal directions at any time.
"""
import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)

N = 512            # signal length
K = 64             # DCT coefficients to recover
BATCH = 2048
STEPS = 136
PCA_EVERY = 25

# orthonormal DCT-II basis, built once
n = np.arange(N)
DCT = np.cos(np.pi / N * (n[None, :] + 0.5) * np.arange(K)[:, None])
DCT[0] *= 1 / math.sqrt(2)
DCT *= math.sqrt(2 / N)
DCT_T = torch.from_numpy(DCT.astype(np.float32))


def make_batch(bs):
    decay = torch.exp(-torch.arange(K, dtype=torch.float32) / torch.empty(bs, 1).uniform_(4, 20))
    coef = torch.randn(bs, K) * decay
    clean = coef @ DCT_T
    noise = 0.15 * torch.randn(bs, N)
    # occasional impulsive interference, as on the real line recordings
    spikes = (torch.rand(bs, N) < 0.004).float() * torch.randn(bs, N) * 2.0
    x = clean + noise + spikes
    return x / x.std(dim=1, keepdim=True), coef / 0.3


model = nn.Sequential(
    nn.Linear(N, 768), nn.GELU(),
    nn.Linear(768, 768), nn.GELU(),
    nn.Linear(768, K),
)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=STEPS, pct_start=0.2)


@dataclass
class TrajectoryRecorder:
    capacity: int = 24
    stride: int = 2
    snapshots: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    decimations: int = 0

    def maybe_record(self, step, module):
        if step % self.stride:
            return
        flat = torch.cat([p.detach().reshape(-1) for p in module.parameters()])
        self.snapshots.append(flat.numpy())
        self.steps.append(step)
        if len(self.snapshots) >= self.capacity:
            # keep every other snapshot: still uniform in step count, at twice the stride
            self.snapshots[:] = self.snapshots[::2]
            self.steps[:] = self.steps[::2]
            self.stride *= 2
            self.decimations += 1

    def pca(self, k=2, chunk=1 << 16):
        """Top-k explained variance of the centred trajectory via the (n x n) Gram matrix."""
        X = self.snapshots
        m = len(X)
        if m < 3:
            return None
        d = X[0].shape[0]
        G = np.zeros((m, m))
        for c0 in range(0, d, chunk):
            B = np.stack([x[c0:c0 + chunk] for x in X]).astype(np.float32)
            B -= B.mean(axis=0, keepdims=True)
            G += B @ B.T
        ev = np.linalg.eigvalsh(G)[::-1]
        ev = np.clip(ev, 0, None)
        return ev[:k] / ev.sum()

    @property
    def nbytes(self):
        return sum(s.nbytes for s in self.snapshots)


rec = TrajectoryRecorder()
t0 = time.perf_counter()
loss_hist = []
for step in range(1, STEPS + 1):
    x, y = make_batch(BATCH)
    pred = model(x)
    loss = F.mse_loss(pred, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    sched.step()
    loss_hist.append(loss.item())
    rec.maybe_record(step, model)

    if step % PCA_EVERY == 0:
        ratio = rec.pca()
        with torch.no_grad():
            xv, yv = make_batch(512)
            snr = 10 * math.log10(float((yv ** 2).mean() / F.mse_loss(model(xv), yv)))
        print(f"step {step:3d}  loss {np.mean(loss_hist[-PCA_EVERY:]):.4f}  val SNR {snr:5.1f} dB  "
              f"history {len(rec.snapshots):2d} x stride {rec.stride:2d} ({rec.nbytes / 2 ** 20:5.1f} MB)  "
              f"PC1/PC2 {ratio[0]:.2f}/{ratio[1]:.2f}  {1000 * (time.perf_counter() - t0) / step:.0f} ms/step",
              flush=True)

print(f"finished {STEPS} steps in {time.perf_counter() - t0:.1f}s, {rec.decimations} decimations")
