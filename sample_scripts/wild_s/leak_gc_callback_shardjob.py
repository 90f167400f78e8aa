# expect: leak
# holder: gc.callbacks|ShardJob._on_gc|job._on_gc.__self__
# pattern: offline catalogue-embedding job (small CNN under torch.inference_mode, no optimizer, ~65 ms batches); every shard is processed by a ShardJob that, to attribute throughput dips to garbage collection, registers its bound method self._on_gc in the interpreter-wide gc.callbacks list in __init__ and relies on __del__ to remove it again; the bound method in gc.callbacks is itself a strong reference to the job, so the refcount never reaches zero, __del__ never runs, and every finished ShardJob stays alive with its per-batch embedding list, the concatenated/normalised embedding matrices and the QA thumbnails (~8 MB per shard)
# step_ms: 67
"""Embed a product-image catalogue shard by shard.

Each shard of synthetic product photos is pushed through the image encoder in
batches; the L2-normalised embeddings are written next to a contact sheet of
thumbnails used for manual QA. Per-shard GC pause statistics are collected
because earlier runs showed unexplained throughput dips.
"""
import contextlib
import gc
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Dict, Iterator, List, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger("catalog.embed")


@dataclass
class JobConfig:
    n_shards: int = 24
    batches_per_shard: int = 12
    batch_size: int = 64
    image_size: int = 64
    thumb_size: int = 32
    backbone: str = "convnet_s"
    embed_dim: int = 768
    seed: int = 17


BACKBONES: Dict[str, Callable[[int], nn.Module]] = {}


def backbone(name):
    def deco(fn):
        BACKBONES[name] = fn
        return fn
    return deco


class ConvNet(nn.Module):
    def __init__(self, widths, embed_dim):
        super().__init__()
        layers, c = [], 3
        for w in widths:
            layers += [nn.Conv2d(c, w, 3, stride=2, padding=1), nn.BatchNorm2d(w), nn.GELU(),
                       nn.Conv2d(w, w, 3, padding=1, groups=max(1, w // 16)), nn.BatchNorm2d(w), nn.GELU()]
            c = w
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(2 * c, embed_dim)

    def forward(self, x):
        h = self.body(x)
        pooled = torch.cat([h.mean((2, 3)), h.amax((2, 3))], dim=1)
        return self.head(pooled)


@backbone("convnet_s")
def convnet_s(embed_dim):
    return ConvNet((32, 64, 128, 192), embed_dim)


@backbone("convnet_m")
def convnet_m(embed_dim):
    return ConvNet((48, 96, 192, 320), embed_dim)


# -------------------------------------------------------------------- data

def product_images(cfg: JobConfig, shard: int) -> Iterator[Tuple[torch.Tensor, np.ndarray]]:
    """Synthetic product shots: a coloured object (disc/box/bottle) on a studio background."""
    g = torch.Generator().manual_seed(cfg.seed * 1000 + shard)
    s = cfg.image_size
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, s), torch.linspace(-1, 1, s), indexing="ij")
    for b in range(cfg.batches_per_shard):
        n = cfg.batch_size
        kind = torch.randint(0, 3, (n,), generator=g)
        cx, cy = (torch.rand(2, n, 1, 1, generator=g) - 0.5) * 0.6
        r = 0.25 + 0.25 * torch.rand(n, 1, 1, generator=g)
        disc = ((xx - cx) ** 2 + (yy - cy) ** 2 < r ** 2).float()
        box = (((xx - cx).abs() < r) & ((yy - cy).abs() < r * 0.7)).float()
        bottle = (((xx - cx).abs() < r * 0.35) & ((yy - cy).abs() < r * 1.3)).float()
        mask = torch.stack([disc, box, bottle], 1)[torch.arange(n), kind]
        colour = torch.rand(n, 3, 1, 1, generator=g)
        bg = 0.85 + 0.1 * torch.rand(n, 1, 1, 1, generator=g) - 0.1 * yy.clamp(min=0)
        img = bg * (1 - mask[:, None]) + colour * mask[:, None]
        img = img + 0.02 * torch.randn(img.shape, generator=g)
        ids = np.arange(b * n, (b + 1) * n) + shard * 10 ** 6
        yield img.clamp(0, 1), ids


# -------------------------------------------------------------------- job

class ShardJob:
    """Embeds one shard and keeps what is needed to write it out."""

    def __init__(self, shard: int, cfg: JobConfig, out_dir: str):
        self.shard = shard
        self.cfg = cfg
        self.out_dir = out_dir
        self.embeddings: List[np.ndarray] = []
        self.ids: List[np.ndarray] = []
        self.thumbs: List[np.ndarray] = []
        self.manifest: List[dict] = []
        self.gc_pauses: List[float] = []
        self._gc_t0 = None
        self.active = True
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase, info):
        if not self.active:
            return
        if phase == "start":
            self._gc_t0 = time.perf_counter()
        elif self._gc_t0 is not None:
            self.gc_pauses.append(time.perf_counter() - self._gc_t0)
            self._gc_t0 = None

    def add(self, emb: torch.Tensor, imgs: torch.Tensor, ids: np.ndarray):
        self.embeddings.append(emb.numpy().copy())
        self.ids.append(ids)
        norms = emb.norm(dim=1).tolist()
        for i, n in zip(ids.tolist(), norms):
            self.manifest.append({"id": i, "shard": self.shard, "norm": round(n, 4), "status": "ok"})
        t = F.interpolate(imgs, size=(self.cfg.thumb_size,) * 2, mode="area")
        self.thumbs.append((t * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy().copy())

    def finish(self) -> dict:
        self.active = False
        self.matrix = np.concatenate(self.embeddings)
        self.normed = (self.matrix / np.linalg.norm(self.matrix, axis=1, keepdims=True)).astype(np.float16)
        ids = np.concatenate(self.ids)
        path = os.path.join(self.out_dir, f"shard_{self.shard:04d}.npz")
        np.savez(path, ids=ids, emb=self.normed)
        sheet = np.concatenate(self.thumbs)[:64]
        np.save(os.path.join(self.out_dir, f"shard_{self.shard:04d}_qa.npy"), sheet)
        return {"shard": self.shard, "n": len(ids), "bytes": os.path.getsize(path),
                "gc_pauses": len(self.gc_pauses), "gc_ms": 1000 * sum(self.gc_pauses)}

    def __del__(self):
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._on_gc)


@contextlib.contextmanager
def scratch_dir(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def embed_batch(model, imgs, mean, std):
    x = (imgs - mean) / std
    return F.normalize(model(x), dim=1) * 8.0


def run(cfg: JobConfig, out_dir: str):
    torch.manual_seed(cfg.seed)
    model = BACKBONES[cfg.backbone](cfg.embed_dim).eval()
    mean = torch.tensor([0.6, 0.6, 0.6]).view(1, 3, 1, 1)
    std = torch.tensor([0.25, 0.25, 0.25]).view(1, 3, 1, 1)
    encode = partial(embed_batch, model, mean=mean, std=std)
    reports = []
    step = 0
    t_start = time.perf_counter()
    for shard in range(cfg.n_shards):
        job = ShardJob(shard, cfg, out_dir)
        t0 = time.perf_counter()
        with torch.inference_mode():
            for imgs, ids in product_images(cfg, shard):
                job.add(encode(imgs), imgs, ids)
                step += 1
        rep = job.finish()
        rep["sec"] = time.perf_counter() - t0
        reports.append(rep)
        log.info("shard %3d: %d items, %.1f KB written, %.2fs (%.0f ms/batch), gc pauses %d (%.1f ms)",
                 shard, rep["n"], rep["bytes"] / 1024, rep["sec"], 1000 * rep["sec"] / cfg.batches_per_shard,
                 rep["gc_pauses"], rep["gc_ms"])
    total = sum(r["n"] for r in reports)
    log.info("embedded %d items in %d batches, %.1fs", total, step, time.perf_counter() - t_start)
    return reports


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(1)
    cfg = JobConfig()
    with scratch_dir("catalog_embed_") as out_dir:
        reports = run(cfg, out_dir)
        written = sorted(f for f in os.listdir(out_dir) if f.endswith(".npz"))
    print(f"{len(written)} shards written, {sum(r['n'] for r in reports)} embeddings")


if __name__ == "__main__":
    main()
