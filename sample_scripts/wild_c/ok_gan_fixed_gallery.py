# expect: no_leak
# holder:
# pattern: DCGAN-style conv GAN, two optimizers; a gallery of 16 samples from a fixed noise vector is regenerated under no_grad and replaced every epoch, saved as a matplotlib grid (figure closed); loss lists hold floats
# step_ms: 50
"""Small DCGAN on synthetic 1x32x32 "rings", following the DCGAN tutorial.

Differences from the tutorial that keep memory flat:
* ``img_list`` in the tutorial grows every 500 iterations; here ``gallery``
  is *replaced* each epoch with ``G(fixed_noise)`` computed under
  ``torch.no_grad()`` and detached to CPU, so only 16 images are kept.
* The grid figure is written to a temporary directory and closed with
  ``plt.close(fig)`` each epoch (same file name, overwritten).
* ``G_losses`` / ``D_losses`` hold ``.item()`` floats (a few thousand floats).
"""
import os
import tempfile
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.set_num_threads(1)
torch.manual_seed(999)

nz, ngf, ndf = 32, 16, 16


def rings(n):
    yy, xx = torch.meshgrid(torch.arange(32.0), torch.arange(32.0), indexing="ij")
    c = 10 + 12 * torch.rand(n, 2, 1, 1)
    r = 4 + 6 * torch.rand(n, 1, 1)
    d = ((xx - c[:, 0]) ** 2 + (yy - c[:, 1]) ** 2).sqrt()
    return (torch.exp(-((d - r) ** 2)) * 2 - 1).unsqueeze(1)


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),   # 4x4
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),  # 8x8
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),  # 16x16
            nn.ConvTranspose2d(ngf, 1, 4, 2, 1, bias=False), nn.Tanh(),  # 32x32
        )

    def forward(self, x):
        return self.main(x)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(1, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, 1, 4, 1, 0, bias=False),
        )

    def forward(self, x):
        return self.main(x).view(-1)


def save_grid(images, path, epoch):
    fig, axes = plt.subplots(4, 4, figsize=(4, 4))
    for ax, img in zip(axes.flat, images):
        ax.imshow(img[0].numpy(), cmap="gray", vmin=-1, vmax=1)
        ax.axis("off")
    fig.suptitle(f"epoch {epoch}")
    fig.savefig(path)
    plt.close(fig)


def main():
    dataloader = DataLoader(TensorDataset(rings(2048)), batch_size=64, shuffle=True, num_workers=0)
    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    criterion = nn.BCEWithLogitsLoss()
    fixed_noise = torch.randn(16, nz, 1, 1)
    real_label, fake_label = 1.0, 0.0
    optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))

    G_losses, D_losses = [], []
    gallery = None
    out_dir = tempfile.mkdtemp(prefix="dcgan_")
    # plot some training images first, like the tutorial does
    real_batch = next(iter(dataloader))[0][:16]
    save_grid(real_batch, os.path.join(out_dir, "training_images.png"), "real")
    num_epochs = 10
    t0 = time.time()
    for epoch in range(num_epochs):
        for i, (real,) in enumerate(dataloader):
            # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
            netD.zero_grad()
            b_size = real.size(0)
            label = torch.full((b_size,), real_label)
            errD_real = criterion(netD(real), label)
            errD_real.backward()
            noise = torch.randn(b_size, nz, 1, 1)
            fake = netG(noise)
            label.fill_(fake_label)
            errD_fake = criterion(netD(fake.detach()), label)
            errD_fake.backward()
            errD = errD_real + errD_fake
            optimizerD.step()

            # (2) Update G: maximize log(D(G(z)))
            netG.zero_grad()
            label.fill_(real_label)
            errG = criterion(netD(fake), label)
            errG.backward()
            optimizerG.step()

            G_losses.append(errG.item())
            D_losses.append(errD.item())

        with torch.no_grad():
            gallery = netG(fixed_noise).detach().cpu()
        save_grid(gallery, os.path.join(out_dir, "progress.png"), epoch)
        print(f"[{epoch+1}/{num_epochs}] Loss_D {sum(D_losses[-len(dataloader):])/len(dataloader):.3f} "
              f"Loss_G {sum(G_losses[-len(dataloader):])/len(dataloader):.3f}  ({time.time()-t0:.1f}s)")

    for name in ("progress.png", "training_images.png"):
        os.remove(os.path.join(out_dir, name))
    os.rmdir(out_dir)


if __name__ == "__main__":
    main()
