# expect: leak
# holder: Gcf|figs|pyplot|figure
# pattern: a new pyplot figure of reconstructions is created and saved every epoch but never closed, so pyplot's figure manager keeps all of them
# step_ms: 12
"""Denoising autoencoder on synthetic 28x28 "digits" (blobs + strokes).

After every epoch the script draws a grid of inputs / reconstructions with
``plt.subplots`` and saves it to a PNG in a temp folder. The figure is never
closed, so pyplot's global figure manager keeps every figure (and its Agg
canvas) alive.
Fix: ``plt.close(fig)`` after ``savefig`` (or use ``matplotlib.figure.Figure``).
"""
import os
import shutil
import tempfile
import time
import numpy as np
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(5)
rng = np.random.default_rng(5)


def synth_images(n):
    yy, xx = np.mgrid[:28, :28]
    imgs = np.zeros((n, 28, 28), dtype=np.float32)
    for i in range(n):
        for _ in range(rng.integers(1, 4)):
            cx, cy, s = rng.uniform(6, 22), rng.uniform(6, 22), rng.uniform(1.5, 4)
            imgs[i] += np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * s * s))
        r = rng.integers(4, 24)
        imgs[i, r, 4:24] += 0.8
    return np.clip(imgs, 0, 1)


class AutoEncoder(nn.Module):
    def __init__(self, z=32):
        super().__init__()
        self.enc = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, z))
        self.dec = nn.Sequential(nn.Linear(z, 256), nn.ReLU(), nn.Linear(256, 784), nn.Sigmoid())

    def forward(self, x):
        return self.dec(self.enc(x)).view(-1, 1, 28, 28)


def plot_reconstructions(clean, noisy, recon, epoch, out_dir):
    fig, axes = plt.subplots(3, 8, figsize=(10, 4))
    for j in range(8):
        for row, img in enumerate((clean, noisy, recon)):
            axes[row, j].imshow(img[j, 0], cmap="gray", vmin=0, vmax=1)
            axes[row, j].axis("off")
    fig.suptitle(f"epoch {epoch}")
    fig.savefig(os.path.join(out_dir, f"recon_{epoch:03d}.png"), dpi=110)


data = torch.from_numpy(synth_images(2000)).unsqueeze(1)
fixed = data[:8]
model = AutoEncoder()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
out_dir = tempfile.mkdtemp(prefix="ae_recon_")

t0 = time.time()
steps = 0
EPOCHS = 30
for epoch in range(EPOCHS):
    perm = torch.randperm(len(data))
    ep_loss = 0.0
    for i in range(0, len(data), 64):
        x = data[perm[i:i + 64]]
        noisy = (x + 0.3 * torch.randn_like(x)).clamp(0, 1)
        loss = F.binary_cross_entropy(model(noisy), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ep_loss += loss.item() * len(x)
        steps += 1
    with torch.no_grad():
        noisy_fixed = (fixed + 0.3 * torch.randn_like(fixed)).clamp(0, 1)
        recon = model(noisy_fixed)
    plot_reconstructions(fixed.numpy(), noisy_fixed.numpy(), recon.numpy(), epoch, out_dir)
    if epoch % 5 == 0:
        print(f"epoch {epoch:2d} bce {ep_loss / len(data):.4f} ({time.time() - t0:.1f}s)")

print(f"{steps} steps, {1000 * (time.time() - t0) / steps:.1f} ms/step; {len(os.listdir(out_dir))} figures written")
shutil.rmtree(out_dir, ignore_errors=True)
