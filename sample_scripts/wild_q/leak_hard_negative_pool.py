# expect: leak
# holder: miner.pool|self.pool|pool
# pattern: product-image retrieval embedding net (small CNN, batch-hard triplet loss, torch.optim.Adam) with a HardNegativeMiner whose FIFO pool is deque(maxlen=capacity); the capacity comes from cfg = {**DEFAULTS, **vars(args)}, and --pool-size is declared without a default, so argparse's None overrides DEFAULTS["pool_size"] = 2048 and the deque is unbounded: every step pushes up to 12 hard pairs (cloned 3x32x32 negative and anchor images, labels, embedding), nothing ever falls off, and miner.pool grows for the whole run (only 32 random entries are re-embedded per step)
# step_ms: 44
"""Metric learning for near-duplicate product photo retrieval.

Each synthetic "product" is a smooth random texture with a dominant colour;
its photos are shifted, flipped, colour-jittered and noisy versions of it.
A small CNN maps photos to L2-normalised 64-d embeddings and is trained
with the batch-hard triplet loss on P x K batches.  Hard negatives found in
a batch (other products that land inside the margin) are kept in a FIFO
pool and a few of them are re-embedded and mixed into the negatives of
later batches, which helps with the visually confusable product families.
Recall@1 on a held-out gallery is reported periodically.
"""
import argparse
import random
import time
from collections import deque

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEFAULTS = {
    "steps": 420,
    "classes": 300,
    "p": 12,
    "k": 4,
    "lr": 1e-3,
    "margin": 0.3,
    "pool_size": 2048,
    "pool_draw": 32,
    "max_push": 12,
    "eval_every": 60,
    "seed": 0,
}


def smooth_noise(rng, size, scale):
    coarse = rng.standard_normal((3, size // scale + 2, size // scale + 2)).astype(np.float32)
    up = np.kron(coarse, np.ones((1, scale, scale), np.float32))[:, :size, :size]
    k = np.ones(scale, np.float32) / scale
    up = np.apply_along_axis(lambda v: np.convolve(v, k, mode="same"), 2, up)
    return np.apply_along_axis(lambda v: np.convolve(v, k, mode="same"), 1, up)


class ProductPhotos:
    def __init__(self, n_classes, size=32, seed=0):
        rng = np.random.default_rng(seed)
        self.size = size
        fam = rng.integers(0, n_classes // 6, size=n_classes)
        fam_tex = {f: smooth_noise(rng, size, 6) for f in np.unique(fam)}
        self.protos = np.stack([
            0.7 * fam_tex[fam[c]] + 0.45 * smooth_noise(rng, size, 4) + rng.normal(0, 0.6, (3, 1, 1)).astype(np.float32)
            for c in range(n_classes)
        ])
        self.rng = np.random.default_rng(seed + 1)

    def photo(self, c):
        r = self.rng
        x = self.protos[c]
        dx, dy = r.integers(-3, 4, size=2)
        x = np.roll(x, (dy, dx), axis=(1, 2))
        if r.random() < 0.5:
            x = x[:, :, ::-1]
        gain = r.normal(1.0, 0.15, (3, 1, 1)).astype(np.float32)
        bias = r.normal(0.0, 0.15, (3, 1, 1)).astype(np.float32)
        noise = r.normal(0, 0.25, x.shape).astype(np.float32)
        return x * gain + bias + noise

    def pk_batch(self, p, k, n_classes):
        classes = self.rng.choice(n_classes, size=p, replace=False)
        labels = np.repeat(classes, k)
        imgs = np.stack([self.photo(c) for c in labels])
        return torch.from_numpy(imgs), torch.from_numpy(labels)


class EmbedNet(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(), nn.MaxPool2d(2))
        self.features = nn.Sequential(block(3, 16), block(16, 32), block(32, 64), block(64, 128))
        self.proj = nn.Linear(128, dim)

    def forward(self, x):
        h = self.features(x).mean(dim=(2, 3))
        return F.normalize(self.proj(h), dim=1)


class HardNegativeMiner:
    def __init__(self, capacity, margin):
        self.pool = deque(maxlen=capacity)
        self.margin = margin
        self.pushed = 0

    def push(self, imgs, labels, emb, d_ap, d_an_min, an_idx, max_push):
        hard = torch.nonzero(d_an_min < d_ap + self.margin).flatten()
        hard = hard[torch.randperm(len(hard))[:max_push]]
        for a in hard.tolist():
            j = int(an_idx[a])
            self.pool.append((imgs[j].clone(), int(labels[j]), emb[j].detach().clone(),
                              imgs[a].clone(), int(labels[a])))
            self.pushed += 1

    def draw(self, n):
        if len(self.pool) < n:
            return None
        picks = random.sample(range(len(self.pool)), n)
        items = [self.pool[i] for i in picks]
        return torch.stack([it[0] for it in items]), torch.tensor([it[1] for it in items])

    def confusable_pairs(self, top=5):
        counts = {}
        for _, neg, _, _, anc in self.pool:
            key = (min(neg, anc), max(neg, anc))
            counts[key] = counts.get(key, 0) + 1
        return sorted(counts.items(), key=lambda kv: -kv[1])[:top]


def batch_hard_triplet(emb, labels, margin, extra_emb=None, extra_labels=None):
    dist = torch.cdist(emb, emb)
    same = labels[:, None] == labels[None, :]
    d_ap = (dist * same).max(dim=1).values
    d_an = dist.masked_fill(same, float("inf"))
    if extra_emb is not None:
        d_x = torch.cdist(emb, extra_emb).masked_fill(labels[:, None] == extra_labels[None, :], float("inf"))
        d_an_all = torch.cat([d_an, d_x], dim=1)
    else:
        d_an_all = d_an
    d_an_min = d_an_all.min(dim=1).values
    loss = F.relu(d_ap - d_an_min + margin).mean()
    return loss, d_ap.detach(), d_an.min(dim=1)


@torch.no_grad()
def recall_at_1(model, data, n_classes, per_class=2):
    model.eval()
    labels = np.repeat(np.arange(n_classes), per_class)
    emb = []
    for i in range(0, len(labels), 128):
        x = torch.from_numpy(np.stack([data.photo(c) for c in labels[i:i + 128]]))
        emb.append(model(x))
    emb = torch.cat(emb)
    sim = emb @ emb.T
    sim.fill_diagonal_(-2)
    nn_idx = sim.argmax(1).numpy()
    model.train()
    return float((labels[nn_idx] == labels).mean())


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=DEFAULTS["steps"])
    p.add_argument("--classes", type=int, default=DEFAULTS["classes"])
    p.add_argument("--lr", type=float, default=DEFAULTS["lr"])
    p.add_argument("--margin", type=float, default=DEFAULTS["margin"])
    p.add_argument("--pool-size", type=int,
                   help=f"hard negatives kept in the FIFO pool (default: {DEFAULTS['pool_size']})")
    p.add_argument("--pool-draw", type=int, default=DEFAULTS["pool_draw"])
    p.add_argument("--eval-every", type=int, default=DEFAULTS["eval_every"])
    p.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    args = p.parse_args()
    cfg = {**DEFAULTS, **vars(args)}

    torch.manual_seed(cfg["seed"])
    random.seed(cfg["seed"])
    torch.set_num_threads(1)
    data = ProductPhotos(cfg["classes"], seed=cfg["seed"])
    model = EmbedNet()
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    miner = HardNegativeMiner(cfg["pool_size"], cfg["margin"])

    t0 = time.perf_counter()
    losses = deque(maxlen=50)
    for step in range(1, cfg["steps"] + 1):
        x, y = data.pk_batch(cfg["p"], cfg["k"], cfg["classes"])
        drawn = miner.draw(cfg["pool_draw"])
        if drawn is not None:
            xn, yn = drawn
            emb_all = model(torch.cat([x, xn]))
            emb, emb_n = emb_all[:len(x)], emb_all[len(x):]
            loss, d_ap, (d_an_min, an_idx) = batch_hard_triplet(emb, y, cfg["margin"], emb_n, yn)
        else:
            emb = model(x)
            loss, d_ap, (d_an_min, an_idx) = batch_hard_triplet(emb, y, cfg["margin"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        miner.push(x, y, emb, d_ap, d_an_min.detach(), an_idx, DEFAULTS["max_push"])
        losses.append(loss.item())

        if step % cfg["eval_every"] == 0:
            r1 = recall_at_1(model, data, min(cfg["classes"], 200))
            ms = (time.perf_counter() - t0) * 1000 / step
            print(f"step {step:4d}  triplet {np.mean(losses):.4f}  recall@1 {r1:.3f}  "
                  f"pool {len(miner.pool)} (pushed {miner.pushed})  {ms:.0f} ms/step", flush=True)
    print("most confusable product pairs:", miner.confusable_pairs())


if __name__ == "__main__":
    main()
