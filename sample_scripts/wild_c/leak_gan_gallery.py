# expect: leak
# holder: gallery
# pattern: GAN training loop appends generator output (not detached, whole-batch storage behind a slice) to a "gallery" list every few steps for later visualisation
# step_ms: 12
"""Vanilla MLP GAN on synthetic 28x28 "digits" (blurred random rings).

Two optimizers (D and G), BCEWithLogits losses, the usual
``D(real)`` / ``D(fake.detach())`` / ``D(fake)`` dance.  To make a progress
animation at the end, the author stores ``fake[:16]`` in ``gallery`` every
``sample_every`` steps.  ``fake[:16]`` is a *view* of the full generated
batch and still carries ``grad_fn``, so each entry pins the whole batch
(and the generator's autograd nodes).  The list is never trimmed.

Fix: ``gallery.append(fake[:16].detach().clone())`` (or generate from a
fixed noise vector under ``torch.no_grad()`` once per epoch and keep only the
latest frames).
"""
import math
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.set_num_threads(1)
torch.manual_seed(0)

LATENT = 64
IMG = 28 * 28


def make_fake_digits(n):
    """Smooth random blobs so the GAN has something learnable."""
    yy, xx = torch.meshgrid(torch.arange(28.0), torch.arange(28.0), indexing="ij")
    cx = 8 + 12 * torch.rand(n, 1, 1)
    cy = 8 + 12 * torch.rand(n, 1, 1)
    r = 3 + 4 * torch.rand(n, 1, 1)
    d = ((xx - cx) ** 2 + (yy - cy) ** 2).sqrt()
    img = torch.exp(-((d - r) ** 2) / 2.0)
    return (img * 2 - 1).reshape(n, IMG)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(LATENT, 256), nn.LeakyReLU(0.2),
            nn.Linear(256, 512), nn.BatchNorm1d(512), nn.LeakyReLU(0.2),
            nn.Linear(512, IMG), nn.Tanh(),
        )

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(IMG, 512), nn.LeakyReLU(0.2),
            nn.Linear(512, 256), nn.LeakyReLU(0.2),
            nn.Linear(256, 1),
        )

    def forward(self, x):
        return self.net(x)


def main():
    data = make_fake_digits(4096)
    loader = DataLoader(TensorDataset(data), batch_size=64, shuffle=True, num_workers=0, drop_last=True)

    G, D = Generator(), Discriminator()
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    criterion = nn.BCEWithLogitsLoss()

    gallery = []          # frames for the training animation
    sample_every = 5
    step = 0
    n_epochs = 16
    t0 = time.time()
    for epoch in range(n_epochs):
        g_losses, d_losses = [], []
        for (real,) in loader:
            bs = real.size(0)
            ones = torch.ones(bs, 1)
            zeros = torch.zeros(bs, 1)

            # ---- train D
            z = torch.randn(bs, LATENT)
            fake = G(z)
            d_loss = criterion(D(real), ones) + criterion(D(fake.detach()), zeros)
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()

            # ---- train G
            g_loss = criterion(D(fake), ones)
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()

            if step % sample_every == 0:
                gallery.append(fake[:16])

            g_losses.append(g_loss.item())
            d_losses.append(d_loss.item())
            step += 1

        if epoch % 3 == 0 or epoch == n_epochs - 1:
            print(f"[{epoch+1}/{n_epochs}] D {sum(d_losses)/len(d_losses):.3f}  "
                  f"G {sum(g_losses)/len(g_losses):.3f}  frames={len(gallery)}  ({time.time()-t0:.1f}s)")

    # "animation": just report the pixel stats of a few frames
    for i in range(0, len(gallery), max(1, len(gallery) // 4)):
        frame = gallery[i]
        print(f"frame {i}: mean {frame.mean().item():+.3f} std {frame.std().item():.3f}")


if __name__ == "__main__":
    main()
