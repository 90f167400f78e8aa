# expect: leak
# holder: target_iter
# pattern: DANN-style domain adaptation draws unlabeled target batches with next(target_iter), where target_iter = itertools.cycle(target_loader) "so the target side never runs out"; the target loader streams a recorded corpus far larger than one run, so cycle() never finishes its first pass and keeps its own saved reference to every target batch it has yielded (1D CNN + gradient reversal layer, torch.optim.SGD)
# step_ms: 33
"""Unsupervised domain adaptation for human-activity recognition (DANN).

Source domain: labelled windows from a waist-worn phone IMU (acc + gyro).
Target domain: unlabelled windows from a wrist-worn band (rotated axes,
different gain, noisier sensor).  A shared 1D CNN feature extractor is trained
on the source labels while a domain classifier behind a gradient reversal
layer pushes the features to be domain invariant (Ganin et al., 2016), with
the usual lambda / learning-rate schedules from the paper.

The target recordings are decoded shard by shard from a (here: synthetic)
archive that is much larger than what one adaptation run consumes.
"""
import argparse
import itertools
import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

ACTIVITIES = ["walk", "run", "stairs_up", "stairs_down", "sit", "stand"]
FS = 50.0
WIN = 128

_BASE_FREQ = np.array([1.8, 2.8, 1.4, 1.6, 0.0, 0.0], dtype=np.float32)
_AMP = np.array([1.0, 2.2, 0.8, 1.1, 0.05, 0.08], dtype=np.float32)
_GRAVITY = np.array(
    [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.2, 0.0, 0.98],
     [-0.2, 0.0, 0.98], [0.9, 0.0, 0.4], [0.0, 0.0, 1.0]],
    dtype=np.float32,
)


def synth_windows(rng, n, domain):
    """Generate n IMU windows (n, 6, WIN) and their activity labels."""
    y = rng.integers(0, len(ACTIVITIES), size=n)
    t = np.arange(WIN, dtype=np.float32) / FS
    f = _BASE_FREQ[y] * rng.uniform(0.85, 1.15, size=n).astype(np.float32)
    phase = rng.uniform(0, 2 * np.pi, size=(n, 3)).astype(np.float32)
    sig = _AMP[y][:, None, None] * np.sin(
        2 * np.pi * f[:, None, None] * t[None, None, :] + phase[:, :, None]
    )
    sig = sig + _GRAVITY[y][:, :, None]
    gyro = np.gradient(sig, axis=2) * (0.1 * FS)
    sig = np.concatenate([sig, gyro], axis=1)  # (n, 6, WIN): accelerometer + gyroscope
    if domain == "target":
        ang = 0.6
        rot = np.array(
            [[np.cos(ang), -np.sin(ang), 0.0], [np.sin(ang), np.cos(ang), 0.0], [0.0, 0.0, 1.0]],
            dtype=np.float32,
        )
        sig = np.concatenate([np.einsum("ij,njt->nit", rot, sig[:, :3]),
                              np.einsum("ij,njt->nit", rot, sig[:, 3:])], axis=1) * 1.3
        noise = 0.35
    else:
        noise = 0.15
    sig = sig + noise * rng.standard_normal(sig.shape).astype(np.float32)
    return sig.astype(np.float32), y.astype(np.int64)


class WristRecordings(IterableDataset):
    """Unlabelled wrist-band recordings, decoded one archive shard at a time."""

    def __init__(self, n_shards, shard_size, seed=0):
        self.n_shards = n_shards
        self.shard_size = shard_size
        self.seed = seed

    def __iter__(self):
        rng = np.random.default_rng(self.seed)
        for shard in rng.permutation(self.n_shards):
            srng = np.random.default_rng(self.seed * 100003 + int(shard))
            x, _ = synth_windows(srng, self.shard_size, "target")
            x = torch.from_numpy(x)
            for i in torch.randperm(self.shard_size).tolist():
                yield x[i]


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lam):
        ctx.lam = lam
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_out):
        return -ctx.lam * grad_out, None


class FeatureExtractor(nn.Module):
    def __init__(self, width=24):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(6, width, 7, padding=3), nn.BatchNorm1d(width), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(width, 2 * width, 5, padding=2), nn.BatchNorm1d(2 * width), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(2 * width, 2 * width, 3, padding=1), nn.BatchNorm1d(2 * width), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1), nn.Flatten(),
        )
        self.out_dim = 2 * width

    def forward(self, x):
        return self.net(x)


def mlp_head(d_in, n_out):
    return nn.Sequential(nn.Linear(d_in, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, n_out))


@torch.no_grad()
def evaluate(feat, clf, x, y, bs=512):
    feat.eval()
    clf.eval()
    correct = 0
    for i in range(0, len(x), bs):
        correct += (clf(feat(x[i:i + bs])).argmax(1) == y[i:i + bs]).sum().item()
    feat.train()
    clf.train()
    return correct / len(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--n-source", type=int, default=9000)
    ap.add_argument("--target-shards", type=int, default=400)
    ap.add_argument("--shard-size", type=int, default=2048)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    xs_np, ys_np = synth_windows(rng, args.n_source, "source")
    source = TensorDataset(torch.from_numpy(xs_np), torch.from_numpy(ys_np))
    source_loader = DataLoader(source, batch_size=args.batch_size, shuffle=True, drop_last=True)

    target_loader = DataLoader(
        WristRecordings(args.target_shards, args.shard_size, seed=args.seed + 1),
        batch_size=args.batch_size, drop_last=True,
    )
    # held-out labelled wrist data, only used to monitor adaptation
    xv_np, yv_np = synth_windows(np.random.default_rng(args.seed + 7), 2000, "target")
    xv, yv = torch.from_numpy(xv_np), torch.from_numpy(yv_np)

    feat = FeatureExtractor()
    clf = mlp_head(feat.out_dim, len(ACTIVITIES))
    disc = mlp_head(feat.out_dim, 2)
    params = list(feat.parameters()) + list(clf.parameters()) + list(disc.parameters())
    opt = torch.optim.SGD(params, lr=args.lr, momentum=0.9, weight_decay=1e-4)

    # the target set may be smaller than the source set in other setups, so
    # just loop over it forever
    target_iter = itertools.cycle(target_loader)

    total_steps = args.epochs * len(source_loader)
    step = 0
    t0 = time.time()
    print(f"source windows={len(source)}  steps/epoch={len(source_loader)}  total steps={total_steps}")
    for epoch in range(args.epochs):
        cls_sum = dom_sum = dom_acc_sum = 0.0
        n = 0
        for xs, ys in source_loader:
            xt = next(target_iter)
            p = step / total_steps
            lam = 2.0 / (1.0 + math.exp(-10.0 * p)) - 1.0
            for g in opt.param_groups:
                g["lr"] = args.lr / (1.0 + 10.0 * p) ** 0.75

            f = feat(torch.cat([xs, xt]))
            f_src = f[: len(xs)]
            cls_loss = F.cross_entropy(clf(f_src), ys)
            dom_logits = disc(GradReverse.apply(f, lam))
            dom_y = torch.cat([torch.zeros(len(xs), dtype=torch.long), torch.ones(len(xt), dtype=torch.long)])
            dom_loss = F.cross_entropy(dom_logits, dom_y)
            loss = cls_loss + dom_loss

            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

            cls_sum += cls_loss.item()
            dom_sum += dom_loss.item()
            dom_acc_sum += (dom_logits.argmax(1) == dom_y).float().mean().item()
            n += 1
            step += 1

        tgt_acc = evaluate(feat, clf, xv, yv)
        print(
            f"epoch {epoch + 1}/{args.epochs}  cls={cls_sum / n:.3f}  dom={dom_sum / n:.3f}  "
            f"dom_acc={dom_acc_sum / n:.2f}  lambda={lam:.2f}  target_acc={tgt_acc:.3f}  "
            f"({time.time() - t0:.1f}s)"
        )
    print("done")


if __name__ == "__main__":
    main()
