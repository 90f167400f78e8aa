# expect: leak
# holder: feats|window_fn.__closure__|trainer.loss_fn.keywords['window_fn']|trainer.loss_fn
# pattern: VICReg-style self-supervised pretraining of a small CNN on synthetic texture images (torch.optim.AdamW); the loss centres the embeddings with a mean estimated over a window of recent batches kept by a closure made in make_feature_window(window): push(*views) extends the closure's `feats` list with the detached embeddings of both views and trims with `if len(feats) == window: feats.pop(0)`; since every call adds two entries, the length steps over `window` after the first pop and never equals it again, so the closure cell keeps every step's two 64x512 float32 embedding batches (~256 KB/step); the loss only reads feats[-window:], so training behaves normally
# step_ms: 38
"""VICReg pretraining with a windowed centring estimate.

Two random augmentations of every synthetic texture image are encoded and
projected. The usual VICReg terms (invariance, variance hinge, covariance
decorrelation) are computed, except that the embeddings are centred with a
mean over the last ``cov_window`` embedding batches rather than the current
batch only, which makes the covariance term much less noisy at small batch
sizes. A kNN probe on held-out images is reported at the end.
"""
import contextlib
import functools
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger("ssl.vicreg")


@dataclass
class AugConfig:
    crop: int = 20
    noise: float = 0.05
    jitter: float = 0.3
    flip_p: float = 0.5


@dataclass
class SSLConfig:
    image_size: int = 24
    n_classes: int = 10
    batch_size: int = 64
    steps: int = 480
    lr: float = 2e-3
    weight_decay: float = 0.05
    proj_dim: int = 512
    cov_window: int = 16
    sim_w: float = 25.0
    var_w: float = 25.0
    cov_w: float = 1.0
    loss: str = "vicreg_window"
    log_every: int = 30
    seed: int = 3
    aug: AugConfig = field(default_factory=AugConfig)


# --------------------------------------------------------------------- data

def texture_batches(cfg: SSLConfig, n_batches=None, seed_offset=0):
    """Synthetic textures: oriented gratings + blobs, class = (orientation, frequency) cell."""
    g = torch.Generator().manual_seed(cfg.seed + seed_offset)
    s = cfg.image_size
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, s), torch.linspace(-1, 1, s), indexing="ij")
    i = 0
    while n_batches is None or i < n_batches:
        y = torch.randint(0, cfg.n_classes, (cfg.batch_size,), generator=g)
        theta = (y % 5).float() * math.pi / 5 + 0.15 * torch.randn(cfg.batch_size, generator=g)
        freq = 3.0 + 3.0 * (y // 5).float() + 0.5 * torch.randn(cfg.batch_size, generator=g)
        phase = 2 * math.pi * torch.rand(cfg.batch_size, generator=g)
        proj = xx[None] * torch.cos(theta)[:, None, None] + yy[None] * torch.sin(theta)[:, None, None]
        grating = torch.sin(freq[:, None, None] * math.pi * proj + phase[:, None, None])
        colour = torch.rand(cfg.batch_size, 3, 1, 1, generator=g) * 0.8 + 0.2
        img = colour * grating[:, None]
        cx, cy = (torch.rand(2, cfg.batch_size, 1, 1, generator=g) * 2 - 1)
        blob = torch.exp(-((xx[None] - cx) ** 2 + (yy[None] - cy) ** 2) / 0.05)
        img = img + 0.6 * blob[:, None]
        yield img, y
        i += 1


def augment(x, cfg: AugConfig, g: torch.Generator):
    n, c, h, w = x.shape
    ox, oy = torch.randint(0, h - cfg.crop + 1, (2,), generator=g).tolist()
    v = x[:, :, oy:oy + cfg.crop, ox:ox + cfg.crop]
    v = F.interpolate(v, size=(h, w), mode="bilinear", align_corners=False)
    flip = torch.rand(n, generator=g) < cfg.flip_p
    v = torch.where(flip[:, None, None, None], v.flip(-1), v)
    gain = 1 + cfg.jitter * (torch.rand(n, 1, 1, 1, generator=g) * 2 - 1)
    bias = cfg.jitter * (torch.rand(n, 3, 1, 1, generator=g) - 0.5)
    return v * gain + bias + cfg.noise * torch.randn(v.shape, generator=g)


# --------------------------------------------------------------------- model

class Encoder(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        def block(i, o, s):
            return nn.Sequential(nn.Conv2d(i, o, 3, stride=s, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU())
        self.net = nn.Sequential(block(3, width, 1), block(width, 2 * width, 2),
                                 block(2 * width, 4 * width, 2), block(4 * width, 4 * width, 2))
        self.out_dim = 4 * width

    def forward(self, x):
        return self.net(x).mean((2, 3))


class Projector(nn.Sequential):
    def __init__(self, d_in, d):
        super().__init__(nn.Linear(d_in, d), nn.BatchNorm1d(d), nn.ReLU(), nn.Linear(d, d))


# --------------------------------------------------------------------- loss

def make_feature_window(window: int):
    """Keeps the most recent `window` detached embedding batches for centring."""
    feats: List[torch.Tensor] = []

    def push(*views):
        feats.extend(v.detach() for v in views)
        if len(feats) == window:
            feats.pop(0)
        return feats[-window:]

    return push


def off_diagonal(m):
    n = m.shape[0]
    return m.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


def windowed_vicreg(z1, z2, *, window_fn, sim_w, var_w, cov_w):
    recent = window_fn(z1, z2)
    inv = F.mse_loss(z1, z2)
    mu = torch.cat(recent).mean(0)
    terms = {"inv": inv}
    var = cov = 0.0
    for z in (z1, z2):
        zc = z - mu
        std = torch.sqrt(zc.pow(2).mean(0) + 1e-4)
        var = var + F.relu(1 - std).mean()
        c = (zc.T @ zc) / (len(z) - 1)
        cov = cov + off_diagonal(c).pow(2).sum() / z.shape[1]
    terms["var"], terms["cov"] = var, cov
    total = sim_w * inv + var_w * var + cov_w * cov
    return total, {k: v.item() for k, v in terms.items()}


LOSSES: Dict[str, Callable[[SSLConfig], Callable]] = {
    "vicreg_window": lambda cfg: functools.partial(
        windowed_vicreg, window_fn=make_feature_window(cfg.cov_window),
        sim_w=cfg.sim_w, var_w=cfg.var_w, cov_w=cfg.cov_w),
}


# --------------------------------------------------------------------- trainer

@contextlib.contextmanager
def eval_mode(*modules):
    states = [m.training for m in modules]
    for m in modules:
        m.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        for m, s in zip(modules, states):
            m.train(s)


class SSLTrainer:
    def __init__(self, cfg: SSLConfig, hooks=()):
        self.cfg = cfg
        torch.manual_seed(cfg.seed)
        self.encoder = Encoder()
        self.projector = Projector(self.encoder.out_dim, cfg.proj_dim)
        params = list(self.encoder.parameters()) + list(self.projector.parameters())
        self.optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        warm = 30
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * s / cfg.steps)))
        self.loss_fn = LOSSES[cfg.loss](cfg)
        self.aug_gen = torch.Generator().manual_seed(cfg.seed + 99)
        self.hooks = list(hooks)
        self.step = 0

    def train_step(self, x):
        v1 = augment(x, self.cfg.aug, self.aug_gen)
        v2 = augment(x, self.cfg.aug, self.aug_gen)
        z1 = self.projector(self.encoder(v1))
        z2 = self.projector(self.encoder(v2))
        loss, terms = self.loss_fn(z1, z2)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        terms["loss"] = loss.item()
        return terms

    def fit(self):
        data = texture_batches(self.cfg)
        for x, _ in data:
            if self.step >= self.cfg.steps:
                break
            terms = self.train_step(x)
            for h in self.hooks:
                h(self, terms)
            self.step += 1

    def knn_probe(self, k=10):
        with eval_mode(self.encoder):
            bank = [(F.normalize(self.encoder(x), dim=1), y) for x, y in texture_batches(self.cfg, 8, 1)]
            query = [(F.normalize(self.encoder(x), dim=1), y) for x, y in texture_batches(self.cfg, 4, 2)]
        fb = torch.cat([b[0] for b in bank])
        yb = torch.cat([b[1] for b in bank])
        correct = total = 0
        for fq, yq in query:
            idx = (fq @ fb.T).topk(k, dim=1).indices
            pred = torch.mode(yb[idx], dim=1).values
            correct += int((pred == yq).sum())
            total += len(yq)
        return correct / total


def progress_hook(every):
    t0 = time.perf_counter()
    smooth = {}

    def hook(trainer, terms):
        for k, v in terms.items():
            smooth[k] = v if k not in smooth else 0.9 * smooth[k] + 0.1 * v
        if (trainer.step + 1) % every == 0:
            log.info("step %4d  loss %.3f  inv %.4f  var %.3f  cov %.3f  lr %.2e  %.1fs",
                     trainer.step + 1, smooth["loss"], smooth["inv"], smooth["var"], smooth["cov"],
                     trainer.scheduler.get_last_lr()[0], time.perf_counter() - t0)
    return hook


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(1)
    cfg = SSLConfig()
    trainer = SSLTrainer(cfg, hooks=[progress_hook(cfg.log_every)])
    trainer.fit()
    acc = trainer.knn_probe()
    print(f"pretraining done after {trainer.step} steps; kNN probe accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
