# expect: leak
# holder: all_logits|main:all_logits|outputs
# pattern: evaluation loop (no optimizer, no backward): backbone runs under no_grad but the MLP probe head does not; every batch's logits are appended to a list and keep the head's graph (saved activations) alive
# step_ms: 250
"""Probe evaluation: frozen ResNet-style backbone + MLP probe head on a synthetic test set.

The evaluation collects `all_logits` and `all_labels` so that top-1/top-5 and a
calibration error can be computed over the full set at the end.  Feature
extraction is decorated with @torch.no_grad(), but the probe head is applied
outside of it, so each stored logits tensor holds a grad_fn whose saved
activations (features, 1024-wide hidden layers) are ~0.8 MB per batch.  Nothing
ever calls backward, so none of it is freed until the list goes away.
Fix: `with torch.inference_mode():` around the whole loop (or store logits.detach()).
"""
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.short = (nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
                      if stride != 1 or c_in != c_out else nn.Identity())

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(h)) + self.short(x))


class Backbone(nn.Module):
    def __init__(self, width=40):
        super().__init__()
        self.out_dim = 4 * width
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 2, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.layers = nn.Sequential(Block(width, width, 1), Block(width, 2 * width, 2),
                                    Block(2 * width, 4 * width, 2))

    def forward(self, x):
        return F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1).flatten(1)


def probe_head(d_in, n_classes, hidden=1024):
    return nn.Sequential(nn.LayerNorm(d_in), nn.Linear(d_in, hidden), nn.GELU(),
                         nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, n_classes))


@torch.no_grad()
def extract_features(backbone, x):
    return backbone(x)


def test_batches(n_batches, batch_size, n_classes, size=64, seed=123):
    rng = np.random.default_rng(seed)
    freqs = rng.uniform(1, 6, size=(n_classes, 3, 2))
    grid = np.linspace(0, 2 * np.pi, size, dtype=np.float32)
    for _ in range(n_batches):
        y = rng.integers(0, n_classes, batch_size)
        f = freqs[y]
        img = (np.sin(f[..., 0, None, None] * grid[None, None, :, None])
               * np.cos(f[..., 1, None, None] * grid[None, None, None, :]))
        img = img + 0.5 * rng.standard_normal(img.shape)
        yield torch.from_numpy(img.astype(np.float32)), torch.from_numpy(y)


def expected_calibration_error(probs, labels, n_bins=15):
    conf, pred = probs.max(1)
    correct = pred.eq(labels).float()
    ece = torch.zeros(())
    edges = torch.linspace(0, 1, n_bins + 1)
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (conf > lo) & (conf <= hi)
        if m.any():
            ece += m.float().mean() * (conf[m].mean() - correct[m].mean()).abs()
    return ece.item()


def main():
    torch.manual_seed(0)
    n_classes = 20
    backbone = Backbone()
    head = probe_head(backbone.out_dim, n_classes)
    # stand-in for loading a checkpoint: calibrate BN statistics on a few batches
    backbone.train()
    with torch.no_grad():
        for x, _ in test_batches(8, 32, n_classes, seed=7):
            backbone(x)
    backbone.eval()
    head.eval()

    n_batches, batch_size = 70, 64
    all_logits, all_labels = [], []
    t0 = time.time()
    for i, (x, y) in enumerate(test_batches(n_batches, batch_size, n_classes)):
        feats = extract_features(backbone, x)
        logits = head(feats)
        all_logits.append(logits)
        all_labels.append(y)
        if (i + 1) % 15 == 0:
            print(f"evaluated {i + 1}/{n_batches} batches ({time.time() - t0:.1f}s)", flush=True)

    logits = torch.cat(all_logits)
    labels = torch.cat(all_labels)
    probs = logits.softmax(1)
    top1 = probs.argmax(1).eq(labels).float().mean().item()
    top5 = probs.topk(5, 1).indices.eq(labels[:, None]).any(1).float().mean().item()
    nll = F.cross_entropy(logits, labels).item()
    print(f"top1 {top1:.3f} top5 {top5:.3f} nll {nll:.3f} (chance {1 / n_classes:.3f}, "
          f"ln C {math.log(n_classes):.3f}) ECE {expected_calibration_error(probs, labels):.3f}")


if __name__ == "__main__":
    main()
