# expect: no_leak
# pattern: online anomaly detector trains a small autoencoder and stores every batch's latent features in FeatureRing, a torch tensor of shape (capacity, dim) allocated (and zero-filled) once in __init__; writes go through index_copy_ at (ptr + arange) % capacity under no_grad with detached features, so after the first pass it overwrites old rows and memory stays flat
# step_ms: 20
"""Online anomaly scoring for a vibration sensor fleet.

An autoencoder is trained continuously on incoming windows.  Each window's
latent code is pushed into a memory of recent codes, and the anomaly score
of a new window is the mean distance to its k nearest neighbours in that
memory (plus the reconstruction error).  Windows scoring above the running
99th percentile are counted as alerts.
"""
import time
from collections import deque

import torch
import torch.nn.functional as F
from torch import nn

torch.set_num_threads(1)
torch.manual_seed(0)

WIN = 256
LATENT = 64
BATCH = 128
N_STEPS = 750


class FeatureRing:
    def __init__(self, capacity, dim):
        self.capacity = capacity
        self.feats = torch.zeros(capacity, dim)
        self.ptr = 0
        self.size = 0

    @torch.no_grad()
    def push(self, batch_feats):
        n = batch_feats.shape[0]
        idx = (self.ptr + torch.arange(n)) % self.capacity
        self.feats.index_copy_(0, idx, batch_feats.detach())
        self.ptr = (self.ptr + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    @torch.no_grad()
    def knn_score(self, query, k=8, sample=8192):
        if self.size < k:
            return torch.zeros(query.shape[0])
        hi = self.size
        if hi > sample:
            rows = torch.randint(0, hi, (sample,))
            bank = self.feats[rows]
        else:
            bank = self.feats[:hi]
        d = torch.cdist(query, bank)
        return d.topk(k, dim=1, largest=False).values.mean(1)


class AE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(WIN, 256), nn.ReLU(), nn.Linear(256, LATENT))
        self.dec = nn.Sequential(nn.Linear(LATENT, 256), nn.ReLU(), nn.Linear(256, WIN))

    def forward(self, x):
        z = self.enc(x)
        return self.dec(z), z


def sensor_windows(g):
    t = torch.arange(WIN, dtype=torch.float32)
    step = 0
    while True:
        step += 1
        freq = 0.05 + 0.02 * torch.rand(BATCH, 1, generator=g)
        x = torch.sin(freq * t) + 0.2 * torch.randn(BATCH, WIN, generator=g)
        if step % 17 == 0:
            x[:4] += 2.0 * torch.randn(4, WIN, generator=g)  # a few faulty windows
        yield x


def main():
    g = torch.Generator().manual_seed(0)
    model = AE()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ring = FeatureRing(capacity=65_536, dim=LATENT)
    recent_scores = deque(maxlen=5000)
    alerts = 0
    t0 = time.time()
    last_print = t0
    stream = sensor_windows(g)
    for step in range(N_STEPS):
        x = next(stream)
        recon, z = model(x)
        rec_err = F.mse_loss(recon, x, reduction="none").mean(1)
        loss = rec_err.mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

        score = ring.knn_score(z.detach()) + rec_err.detach()
        if len(recent_scores) > 1000:
            thr = torch.tensor(list(recent_scores)).quantile(0.99).item()
            alerts += int((score > thr).sum())
        recent_scores.extend(score.tolist())
        ring.push(z)

        now = time.time()
        if now - last_print > 1.0:
            last_print = now
            print(f"step {step:4d} recon {loss.item():.4f} ring {ring.size}/{ring.capacity} "
                  f"alerts {alerts} ({now - t0:.1f}s)", flush=True)
    print(f"done in {time.time() - t0:.1f}s, {alerts} alerts")


if __name__ == "__main__":
    main()
