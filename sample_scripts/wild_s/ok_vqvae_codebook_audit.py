# expect: no_leak
# pattern: VQ-VAE with an EMA codebook on synthetic 32x32 sprite images (torch.optim.Adam, slow ~250 ms steps); halfway through training a one-off CodebookAudit encodes a 5k-image audit split, assigns all 320k latent vectors to codes in chunks, builds a Python dict-of-lists usage index (code -> [(image, position), ...]) and restarts dead codes from far-away latents; the audit's latents, assignments and index are locals of audit() and are freed when it returns (only a small per-code usage summary is kept), so memory spikes once mid-run (~+200 MB for a few seconds) and is flat afterwards
# step_ms: 265
"""VQ-VAE training with a mid-run codebook audit.

Vector-quantised autoencoders tend to leave part of the codebook unused
("dead codes"). Half-way through training we run one audit over a held-out
split: every latent vector is assigned to its nearest code, a usage index is
built to look at which sprites each code serves, and unused codes are
re-initialised from latents that are poorly represented by the current
codebook.
"""
import contextlib
import logging
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Dict, List

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger("vqvae")


@dataclass
class DataConfig:
    image_size: int = 32
    train_images: int = 8000
    audit_images: int = 5000
    seed: int = 8


@dataclass
class VQConfig:
    channels: int = 96
    latent_dim: int = 64
    codebook_size: int = 512
    beta: float = 0.25
    dead_threshold: int = 3


@dataclass
class TrainConfig:
    steps: int = 60
    batch_size: int = 160
    lr: float = 2e-3
    audit_at: float = 0.5
    log_every: int = 6
    data: DataConfig = field(default_factory=DataConfig)
    vq: VQConfig = field(default_factory=VQConfig)


# ------------------------------------------------------------------ data

SPRITES: Dict[str, Callable] = {}


def sprite(name):
    def deco(fn):
        SPRITES[name] = fn
        return fn
    return deco


@sprite("ring")
def _ring(xx, yy, r):
    d = torch.sqrt(xx ** 2 + yy ** 2)
    return ((d > r * 0.6) & (d < r)).float()


@sprite("cross")
def _cross(xx, yy, r):
    return (((xx.abs() < r * 0.25) & (yy.abs() < r)) | ((yy.abs() < r * 0.25) & (xx.abs() < r))).float()


@sprite("diamond")
def _diamond(xx, yy, r):
    return ((xx.abs() + yy.abs()) < r).float()


@sprite("stripes")
def _stripes(xx, yy, r):
    return ((torch.sin(xx * 12 / r) > 0) & (xx.abs() < r) & (yy.abs() < r)).float()


def make_sprites(n, cfg: DataConfig, seed):
    g = torch.Generator().manual_seed(seed)
    s = cfg.image_size
    lin = torch.linspace(-1, 1, s)
    yy, xx = torch.meshgrid(lin, lin, indexing="ij")
    kinds = list(SPRITES.values())
    out = torch.empty(n, 3, s, s, dtype=torch.uint8)
    for start in range(0, n, 500):
        m = min(500, n - start)
        img = torch.zeros(m, 3, s, s)
        for _ in range(2):
            k = torch.randint(0, len(kinds), (m,), generator=g)
            c = (torch.rand(m, 2, generator=g) - 0.5) * 1.0
            r = 0.2 + 0.3 * torch.rand(m, generator=g)
            col = torch.rand(m, 3, generator=g)
            for j, fn in enumerate(kinds):
                sel = (k == j).nonzero().flatten()
                if len(sel) == 0:
                    continue
                mask = fn(xx[None] - c[sel, 0, None, None], yy[None] - c[sel, 1, None, None], r[sel, None, None])
                img[sel] = torch.maximum(img[sel], mask[:, None] * col[sel, :, None, None])
        out[start:start + m] = (img * 255).to(torch.uint8)
    return out


def to_float(batch_u8):
    return batch_u8.float().div_(127.5).sub_(1.0)


def batch_iter(data_u8, batch_size, seed):
    g = torch.Generator().manual_seed(seed)
    while True:
        perm = torch.randperm(len(data_u8), generator=g)
        for s in range(0, len(perm) - batch_size + 1, batch_size):
            yield to_float(data_u8[perm[s:s + batch_size]])


# ------------------------------------------------------------------ model

class VectorQuantizer(nn.Module):
    """Codebook updated with exponential moving averages (VQ-VAE-2 style)."""

    def __init__(self, n_codes, dim, beta, decay=0.97, eps=1e-5):
        super().__init__()
        self.beta, self.decay, self.eps = beta, decay, eps
        self.register_buffer("embed", torch.randn(n_codes, dim) * 0.1)
        self.register_buffer("embed_avg", self.embed.clone())
        self.register_buffer("cluster_size", torch.ones(n_codes))

    @torch.no_grad()
    def init_from(self, z):
        z_flat = z.permute(0, 2, 3, 1).reshape(-1, z.shape[1])
        pick = torch.randperm(len(z_flat))[: len(self.embed)]
        self.reset_codes(torch.arange(len(self.embed)), z_flat[pick])

    @torch.no_grad()
    def reset_codes(self, which, vectors):
        self.embed[which] = vectors
        self.embed_avg[which] = vectors
        self.cluster_size[which] = 1.0

    def assign(self, z_flat):
        w = self.embed
        d = z_flat.pow(2).sum(1, keepdim=True) - 2 * z_flat @ w.T + w.pow(2).sum(1)[None]
        return d.argmin(1), d

    @torch.no_grad()
    def _ema_update(self, z_flat, idx):
        n = len(self.embed)
        counts = torch.bincount(idx, minlength=n).float()
        sums = torch.zeros_like(self.embed).index_add_(0, idx, z_flat)
        self.cluster_size.mul_(self.decay).add_(counts, alpha=1 - self.decay)
        self.embed_avg.mul_(self.decay).add_(sums, alpha=1 - self.decay)
        total = self.cluster_size.sum()
        size = (self.cluster_size + self.eps) / (total + n * self.eps) * total
        self.embed.copy_(F.normalize(self.embed_avg / size[:, None], dim=1))

    def forward(self, z):
        b, c, h, w = z.shape
        z_flat = z.permute(0, 2, 3, 1).reshape(-1, c)
        idx, _ = self.assign(z_flat.detach())
        if self.training:
            self._ema_update(z_flat.detach(), idx)
        q = F.embedding(idx, self.embed).view(b, h, w, c).permute(0, 3, 1, 2)
        loss = self.beta * F.mse_loss(z, q)
        q = z + (q - z).detach()
        return q, loss, idx


class VQVAE(nn.Module):
    def __init__(self, cfg: VQConfig):
        super().__init__()
        c = cfg.channels
        self.enc = nn.Sequential(
            nn.Conv2d(3, c, 4, 2, 1), nn.ReLU(), nn.Conv2d(c, c, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(c, c, 3, 1, 1), nn.ReLU(), nn.Conv2d(c, cfg.latent_dim, 1))
        self.vq = VectorQuantizer(cfg.codebook_size, cfg.latent_dim, cfg.beta)
        self.dec = nn.Sequential(
            nn.Conv2d(cfg.latent_dim, c, 3, 1, 1), nn.ReLU(),
            nn.ConvTranspose2d(c, c, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(c, 3, 4, 2, 1))

    def encode(self, x):
        # unit-norm latents and codes: keeps the codebook from collapsing onto a few entries
        return F.normalize(self.enc(x), dim=1)

    def forward(self, x):
        z = self.encode(x)
        q, vq_loss, idx = self.vq(z)
        return self.dec(q), vq_loss, idx


# ------------------------------------------------------------------ audit

class CodebookAudit:
    def __init__(self, model: VQVAE, cfg: TrainConfig):
        self.model = model
        self.cfg = cfg
        self.summary: Dict[str, float] = {}

    @torch.no_grad()
    def audit(self, images_u8):
        model = self.model
        model.eval()
        latents = []
        for s in range(0, len(images_u8), 500):
            z = model.encode(to_float(images_u8[s:s + 500]))
            latents.append(z.permute(0, 2, 3, 1).reshape(-1, z.shape[1]))
        z_all = torch.cat(latents)
        del latents
        per_image = z_all.shape[0] // len(images_u8)
        codes = torch.empty(len(z_all), dtype=torch.long)
        best_d = torch.empty(len(z_all))
        for s in range(0, len(z_all), 16384):
            idx, d = model.vq.assign(z_all[s:s + 16384])
            codes[s:s + 16384] = idx
            best_d[s:s + 16384] = d.gather(1, idx[:, None]).squeeze(1)
        usage_index = defaultdict(list)
        for flat, code in enumerate(codes.tolist()):
            usage_index[code].append((flat // per_image, flat % per_image))
        counts = np.bincount(codes.numpy(), minlength=self.cfg.vq.codebook_size)
        dead = np.flatnonzero(counts < self.cfg.vq.dead_threshold)
        if len(dead):
            worst = torch.topk(best_d, k=min(len(best_d), 20 * len(dead))).indices
            pick = worst[torch.randperm(len(worst))[: len(dead)]]
            model.vq.reset_codes(torch.from_numpy(dead), z_all[pick])
        spread = [len({img for img, _ in usage_index[c]}) for c in usage_index]
        self.summary = {
            "latents": float(len(z_all)), "used_codes": float((counts > 0).sum()),
            "dead_restarted": float(len(dead)), "median_images_per_code": float(np.median(spread)),
            "perplexity": float(np.exp(-(counts / counts.sum() * np.log(counts / counts.sum() + 1e-12)).sum())),
        }
        model.train()
        return self.summary


# ------------------------------------------------------------------ training

@contextlib.contextmanager
def stopwatch(label):
    t0 = time.perf_counter()
    yield
    log.info("%s: %.2fs", label, time.perf_counter() - t0)


class Runner:
    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg
        torch.manual_seed(cfg.data.seed)
        with stopwatch("generating sprites"):
            self.train_u8 = make_sprites(cfg.data.train_images, cfg.data, cfg.data.seed)
        self.model = VQVAE(cfg.vq)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: 0.5 * (1 + math.cos(math.pi * s / cfg.steps)))
        self.auditor = CodebookAudit(self.model, cfg)
        self.log_rows: List[dict] = []

    def fit(self):
        batches = batch_iter(self.train_u8, self.cfg.batch_size, self.cfg.data.seed + 1)
        with torch.no_grad():
            self.model.vq.init_from(self.model.encode(next(batches)))
        audit_step = int(self.cfg.steps * self.cfg.audit_at)
        usage = torch.zeros(self.cfg.vq.codebook_size)
        t0 = time.perf_counter()
        for step in range(self.cfg.steps):
            x = next(batches)
            recon, vq_loss, idx = self.model(x)
            rec_loss = F.mse_loss(recon, x)
            loss = rec_loss + vq_loss
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()
            usage += torch.bincount(idx, minlength=len(usage)).float()
            self.log_rows.append({"step": step, "rec": rec_loss.item(), "vq": vq_loss.item()})
            if (step + 1) % self.cfg.log_every == 0:
                p = usage / usage.sum()
                ppl = float(torch.exp(-(p * torch.log(p + 1e-12)).sum()))
                log.info("step %3d  rec %.4f  vq %.4f  batch perplexity %.1f  (%.0f ms/step)",
                         step + 1, rec_loss.item(), vq_loss.item(), ppl,
                         1000 * (time.perf_counter() - t0) / (step + 1))
                usage.zero_()
            if step + 1 == audit_step:
                with stopwatch("codebook audit"):
                    audit_u8 = make_sprites(self.cfg.data.audit_images, self.cfg.data, self.cfg.data.seed + 7)
                    summary = self.auditor.audit(audit_u8)
                    del audit_u8
                log.info("audit: %s", ", ".join(f"{k}={v:.1f}" for k, v in summary.items()))


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(1)
    runner = Runner(TrainConfig())
    runner.fit()
    last = runner.log_rows[-1]
    print(f"final reconstruction mse {last['rec']:.4f}, vq loss {last['vq']:.4f}; "
          f"audit restarted {runner.auditor.summary.get('dead_restarted', 0):.0f} codes")


if __name__ == "__main__":
    main()
