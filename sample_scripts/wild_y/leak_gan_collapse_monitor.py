# expect: leak
# holder: CollapseMonitor.samples|trainer.callbacks|samples
# pattern: DCGAN-style GAN on synthetic 24x24 sprite images (conv generator + conv discriminator, two torch.optim.Adam optimizers, non-saturating loss, ~45 ms per step of 64 images, code in a small GANTrainer with a Keras-like callback list + module-level CONFIG). A CollapseMonitor callback keeps "the last `window` batches" of generator samples for a pairwise-diversity check with `self.samples.append(out["fake"].detach()); self.samples = self.samples[-self.window:]`, and the check itself is skipped when window is 0. CONFIG sets collapse_window = 0 ("0 = off"), but for window 0 the slice is samples[-0:], i.e. samples[0:], the whole list, so the disabled monitor still stores every step's detached 64x1x24x24 float32 fake batch (~147 KB) in trainer.callbacks[1].samples for the whole run.
# step_ms: 45
"""DCGAN on synthetic sprites with a small callback-based trainer."""
import math
import time

import numpy as np
import psutil
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "steps": 420,
    "batch_size": 64,
    "z_dim": 32,
    "lr": 2e-4,
    "betas": (0.5, 0.999),
    "log_every": 40,
    "collapse_window": 0,   # batches of generated samples kept for the diversity check (0 = off)
    "collapse_every": 50,
}


def rss_mb():
    return psutil.Process().memory_info().rss / 2**20


def make_sprites(n, rng, size=24):
    yy, xx = np.mgrid[0:size, 0:size]
    imgs = np.zeros((n, 1, size, size), dtype=np.float32)
    for i in range(n):
        cx, cy = rng.uniform(6, size - 6, 2)
        r = rng.uniform(3, 6)
        kind = rng.integers(3)
        if kind == 0:
            m = (xx - cx) ** 2 + (yy - cy) ** 2 <= r * r
        elif kind == 1:
            m = (np.abs(xx - cx) <= r) & (np.abs(yy - cy) <= r)
        else:
            m = (np.abs(xx - cx) + np.abs(yy - cy)) <= r * 1.3
        imgs[i, 0][m] = rng.uniform(0.6, 1.0)
    return imgs * 2 - 1


class Generator(nn.Module):
    def __init__(self, z_dim):
        super().__init__()
        self.fc = nn.Linear(z_dim, 96 * 6 * 6)
        self.net = nn.Sequential(
            nn.BatchNorm2d(96), nn.ReLU(),
            nn.ConvTranspose2d(96, 48, 4, 2, 1), nn.BatchNorm2d(48), nn.ReLU(),
            nn.ConvTranspose2d(48, 1, 4, 2, 1), nn.Tanh(),
        )

    def forward(self, z):
        return self.net(self.fc(z).view(-1, 96, 6, 6))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 48, 4, 2, 1), nn.LeakyReLU(0.2),
            nn.Conv2d(48, 96, 4, 2, 1), nn.BatchNorm2d(96), nn.LeakyReLU(0.2),
            nn.Flatten(), nn.Linear(96 * 6 * 6, 1),
        )

    def forward(self, x):
        return self.net(x).squeeze(1)


class Callback:
    def on_step_end(self, trainer, step, out):
        pass


class LossLogger(Callback):
    def __init__(self, every):
        self.every, self.d, self.g = every, [], []
        self.t0 = time.time()

    def on_step_end(self, trainer, step, out):
        self.d.append(out["d_loss"])
        self.g.append(out["g_loss"])
        if step % self.every == 0:
            print(f"step {step:4d}  D={np.mean(self.d[-self.every:]):.3f}  G={np.mean(self.g[-self.every:]):.3f}  "
                  f"{1000 * (time.time() - self.t0) / step:.1f} ms/step  rss={rss_mb():.1f} MB")


class CollapseMonitor(Callback):
    """Mode-collapse check: mean pairwise distance between recent generator samples."""

    def __init__(self, window, every):
        self.window, self.every = window, every
        self.samples = []

    def on_step_end(self, trainer, step, out):
        self.samples.append(out["fake"].detach())
        self.samples = self.samples[-self.window:]      # keep the last `window` batches
        if self.window and step % self.every == 0:
            x = torch.cat(self.samples).flatten(1)
            idx = torch.randperm(len(x))[:256]
            d = torch.cdist(x[idx], x[idx]).mean().item()
            print(f"  [collapse-monitor] step {step}: mean pairwise L2 = {d:.3f}")


class GANTrainer:
    def __init__(self, cfg, data, callbacks):
        self.cfg = cfg
        self.data = torch.from_numpy(data)
        self.G, self.D = Generator(cfg["z_dim"]), Discriminator()
        self.opt_g = torch.optim.Adam(self.G.parameters(), lr=cfg["lr"], betas=cfg["betas"])
        self.opt_d = torch.optim.Adam(self.D.parameters(), lr=cfg["lr"], betas=cfg["betas"])
        self.callbacks = callbacks
        self.gen = torch.Generator().manual_seed(0)

    def train_step(self):
        B, zd = self.cfg["batch_size"], self.cfg["z_dim"]
        real = self.data[torch.randint(len(self.data), (B,), generator=self.gen)]
        real = real + 0.05 * torch.randn(real.shape, generator=self.gen)
        z = torch.randn(B, zd, generator=self.gen)
        fake = self.G(z)

        d_loss = F.softplus(-self.D(real)).mean() + F.softplus(self.D(fake.detach())).mean()
        self.opt_d.zero_grad(set_to_none=True)
        d_loss.backward()
        self.opt_d.step()

        g_loss = F.softplus(-self.D(fake)).mean()
        self.opt_g.zero_grad(set_to_none=True)
        g_loss.backward()
        self.opt_g.step()
        return {"fake": fake, "d_loss": d_loss.item(), "g_loss": g_loss.item()}

    def fit(self, steps):
        for step in range(1, steps + 1):
            out = self.train_step()
            for cb in self.callbacks:
                cb.on_step_end(self, step, out)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    data = make_sprites(4096, rng)
    callbacks = [
        LossLogger(CONFIG["log_every"]),
        CollapseMonitor(CONFIG["collapse_window"], CONFIG["collapse_every"]),
    ]
    trainer = GANTrainer(CONFIG, data, callbacks)
    print(f"start: rss={rss_mb():.1f} MB")
    t0 = time.time()
    trainer.fit(CONFIG["steps"])
    print(f"end: rss={rss_mb():.1f} MB  wall={time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
