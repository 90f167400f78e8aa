# expect: leak
# holder: latentstats.var|latentstats.mean|stats.var|stats.mean|model.stats
# pattern: running mean/var of the latent codes updated with graph-attached batch statistics (no detach / no torch.no_grad) inside forward(); each EMA node chains to the previous step
# step_ms: 5
"""Autoencoder-based anomaly detector on synthetic sensor windows.

The encoder's latent codes are standardised with running statistics so that an
anomaly score can be computed at validation time.  LatentStats.update() is
called in forward() on the live latent tensor, so `self.mean`/`self.var` are
autograd tensors whose grad_fn links back to the previous step's statistics:
the whole history (saved (z - mean) buffers, encoder nodes) stays reachable
from two small attributes.
Fix: update the statistics under `torch.no_grad()` or on `z.detach()`
(or use register_buffer + in-place updates like BatchNorm does).
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class LatentStats:
    def __init__(self, dim, momentum=0.01):
        self.momentum = momentum
        self.mean = torch.zeros(dim)
        self.var = torch.ones(dim)
        self.count = 0

    def update(self, z):
        m = self.momentum
        batch_mean = z.mean(0)
        batch_var = ((z - self.mean) ** 2).mean(0)
        self.mean = (1 - m) * self.mean + m * batch_mean
        self.var = (1 - m) * self.var + m * batch_var
        self.count += z.shape[0]

    def score(self, z):
        return (((z - self.mean) ** 2) / (self.var + 1e-5)).mean(1)


class WindowAE(nn.Module):
    def __init__(self, channels=8, window=64, latent=48):
        super().__init__()
        d = channels * window
        self.encoder = nn.Sequential(nn.Linear(d, 256), nn.SiLU(), nn.Linear(256, latent))
        self.decoder = nn.Sequential(nn.Linear(latent, 256), nn.SiLU(), nn.Linear(256, d))
        self.stats = LatentStats(latent)

    def forward(self, x):
        z = self.encoder(x.flatten(1))
        if self.training:
            self.stats.update(z)
        return self.decoder(z).view_as(x), z


def sensor_windows(n, channels=8, window=64, anomaly_frac=0.0, rng=None):
    rng = rng or np.random.default_rng()
    t = np.arange(window)[None, None, :]
    freq = rng.uniform(0.05, 0.2, size=(n, channels, 1))
    phase = rng.uniform(0, 2 * np.pi, size=(n, channels, 1))
    x = np.sin(2 * np.pi * freq * t + phase) + 0.1 * rng.standard_normal((n, channels, window))
    labels = rng.random(n) < anomaly_frac
    x[labels] += rng.standard_normal((labels.sum(), channels, window)) * 1.5
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(labels)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = WindowAE()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    val_x, val_y = sensor_windows(1024, anomaly_frac=0.1, rng=rng)

    t0 = time.time()
    step = 0
    for epoch in range(10):
        model.train()
        for _ in range(250):
            x, _ = sensor_windows(128, rng=rng)
            recon, z = model(x)
            loss = F.mse_loss(recon, x)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1

        model.eval()
        with torch.no_grad():
            recon, z = model(val_x)
            err = ((recon - val_x) ** 2).mean(dim=(1, 2))
            score = err + 0.1 * model.stats.score(z)
            k = int(val_y.sum())
            flagged = score.topk(k).indices
            precision = val_y[flagged].float().mean().item()
        print(f"epoch {epoch}  step {step}  train mse {loss.item():.4f}  P@k {precision:.3f}"
              f"  ({time.time() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
