# expect: no_leak
# holder: none
# pattern: evaluation-only loop for a small segmentation net (no optimizer, torch.inference_mode) that reduces every batch straight into fixed-size numpy running sums (per-class intersection/union via np.bincount, pixel-accuracy counters, a calibration histogram for ECE, float Welford stats of per-image loss); no per-batch lists, so memory is flat
# step_ms: 55
"""Evaluate a tiny fully-convolutional segmentation model on synthetic scenes.

Each scene is a noisy image with a few rectangles and discs of different
classes; the model is a small encoder-decoder that is first trained for a
handful of steps so the metrics are not trivial.  Evaluation streams many
batches and keeps only running numpy accumulators:
  * ``inter`` / ``union`` per class (mIoU),
  * correct / total pixel counters,
  * confidence-binned counts / correct / confidence sums (ECE),
  * running mean / M2 of the per-image loss (Welford).
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

H = W = 48
NUM_CLASSES = 5
BATCH = 16
WARM_STEPS = 40
EVAL_BATCHES = 260
N_BINS = 15


def make_scenes(rng, n):
    imgs = rng.normal(0, 0.4, size=(n, 3, H, W)).astype(np.float32)
    masks = np.zeros((n, H, W), dtype=np.int64)
    yy, xx = np.mgrid[0:H, 0:W]
    colors = np.array([[0, 0, 0], [1.5, 0, 0], [0, 1.5, 0], [0, 0, 1.5], [1.2, 1.2, 0]], dtype=np.float32)
    for i in range(n):
        for _ in range(rng.integers(2, 5)):
            c = int(rng.integers(1, NUM_CLASSES))
            cx, cy = rng.integers(6, W - 6), rng.integers(6, H - 6)
            r = int(rng.integers(4, 11))
            if c % 2:
                region = (xx - cx) ** 2 + (yy - cy) ** 2 < r * r
            else:
                region = (np.abs(xx - cx) < r) & (np.abs(yy - cy) < r)
            masks[i][region] = c
            imgs[i][:, region] += colors[c][:, None]
    return torch.from_numpy(imgs), torch.from_numpy(masks)


class TinySegNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(3, 24, 3, padding=1), nn.BatchNorm2d(24), nn.ReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(24, 48, 3, stride=2, padding=1), nn.BatchNorm2d(48), nn.ReLU())
        self.mid = nn.Sequential(nn.Conv2d(48, 48, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(48, 24, 2, stride=2)
        self.dec = nn.Sequential(nn.Conv2d(48, 24, 3, padding=1), nn.ReLU(), nn.Conv2d(24, NUM_CLASSES, 1))

    def forward(self, x):
        e1 = self.enc1(x)
        m = self.mid(self.enc2(e1))
        return self.dec(torch.cat([self.up(m), e1], dim=1))


class SegMetrics:
    def __init__(self, num_classes, n_bins):
        self.k = num_classes
        self.inter = np.zeros(num_classes, dtype=np.int64)
        self.union = np.zeros(num_classes, dtype=np.int64)
        self.correct = 0
        self.total = 0
        self.bin_count = np.zeros(n_bins, dtype=np.int64)
        self.bin_correct = np.zeros(n_bins, dtype=np.int64)
        self.bin_conf = np.zeros(n_bins, dtype=np.float64)
        self.n_bins = n_bins
        self.n_img = 0
        self.loss_mean = 0.0
        self.loss_m2 = 0.0

    def update(self, probs, target, per_image_loss):
        conf, pred = probs.max(dim=1)
        pred = pred.numpy().ravel()
        tgt = target.numpy().ravel()
        conf = conf.numpy().ravel()
        cm = np.bincount(tgt * self.k + pred, minlength=self.k * self.k).reshape(self.k, self.k)
        tp = np.diag(cm)
        self.inter += tp
        self.union += cm.sum(0) + cm.sum(1) - tp
        hit = pred == tgt
        self.correct += int(hit.sum())
        self.total += hit.size
        bins = np.minimum((conf * self.n_bins).astype(np.int64), self.n_bins - 1)
        self.bin_count += np.bincount(bins, minlength=self.n_bins)
        self.bin_correct += np.bincount(bins, weights=hit, minlength=self.n_bins).astype(np.int64)
        self.bin_conf += np.bincount(bins, weights=conf, minlength=self.n_bins)
        for v in per_image_loss.tolist():
            self.n_img += 1
            d = v - self.loss_mean
            self.loss_mean += d / self.n_img
            self.loss_m2 += d * (v - self.loss_mean)

    def summary(self):
        iou = self.inter / np.maximum(self.union, 1)
        nz = self.bin_count > 0
        ece = np.sum(np.abs(self.bin_correct[nz] - self.bin_conf[nz])) / max(self.total, 1)
        std = (self.loss_m2 / max(self.n_img - 1, 1)) ** 0.5
        return {"miou": float(iou.mean()), "pix_acc": self.correct / max(self.total, 1),
                "ece": float(ece), "loss": self.loss_mean, "loss_std": std}


def main():
    rng = np.random.default_rng(0)
    model = TinySegNet()
    # quick warm-up training so the predictions mean something
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(WARM_STEPS):
        x, y = make_scenes(rng, BATCH)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    del opt
    print(f"warm-up done, last train loss {loss.item():.3f}")

    model.eval()
    metrics = SegMetrics(NUM_CLASSES, N_BINS)
    t0 = time.time()
    with torch.inference_mode():
        for b in range(EVAL_BATCHES):
            x, y = make_scenes(rng, BATCH)
            logits = model(x)
            per_img = F.cross_entropy(logits, y, reduction="none").mean(dim=(1, 2))
            metrics.update(F.softmax(logits, dim=1), y, per_img)
            if b % 50 == 0 or b == EVAL_BATCHES - 1:
                s = metrics.summary()
                print(f"batch {b:4d}: mIoU {s['miou']:.3f} pix acc {s['pix_acc']:.3f} "
                      f"ECE {s['ece']:.3f} loss {s['loss']:.3f}±{s['loss_std']:.3f} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
