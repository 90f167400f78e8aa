# expect: leak
# holder: preds|target|metric
# pattern: corruption-robustness evaluation sweep (no optimizer after a short warm-up fit); a hand-written torchmetrics-style CalibrationMetric appends every batch's softmax probs and targets to self.preds / self.target; after each (corruption, severity) the code writes `metric.reset` without the call parentheses, so the state is never cleared and keeps every batch of the whole sweep
# step_ms: 15
"""Corruption robustness + calibration report for a small CNN.

We fit a tiny CNN on synthetic 16x16 "glyph" images, then evaluate it on
a validation set under several corruptions (gaussian noise, blur, contrast
loss, occlusion) at five severities each, ImageNet-C style.  For every
setting we report accuracy, expected calibration error (15 bins) and the
mean confidence.

The metric class follows the torchmetrics protocol: ``update`` per batch,
``compute`` at the end, ``reset`` before the next setting.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

N_CLASSES = 32
IMG = 16
N_VAL = 4_000
BATCH = 250


def make_glyph_data(n, templates, noise=0.35):
    y = torch.randint(0, N_CLASSES, (n,))
    x = templates[y] + noise * torch.randn(n, 1, IMG, IMG)
    # random shifts by up to 2 pixels
    sx, sy = torch.randint(-2, 3, (2,))
    x = torch.roll(x, shifts=(int(sx), int(sy)), dims=(2, 3))
    return x, y


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 4 * 4, N_CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


class CalibrationMetric:
    """Accuracy / ECE / confidence over everything seen since the last reset."""

    def __init__(self, n_bins=15):
        self.n_bins = n_bins
        self.reset()

    def reset(self):
        self.preds = []
        self.target = []

    def update(self, probs, target):
        self.preds.append(probs)
        self.target.append(target)

    def compute(self):
        p = torch.cat(self.preds)
        t = torch.cat(self.target)
        conf, pred = p.max(1)
        correct = (pred == t).float()
        edges = torch.linspace(0, 1, self.n_bins + 1)
        ece = torch.zeros(())
        for lo, hi in zip(edges[:-1], edges[1:]):
            m = (conf > lo) & (conf <= hi)
            if m.any():
                ece += m.float().mean() * (conf[m].mean() - correct[m].mean()).abs()
        return {"acc": correct.mean().item(), "ece": ece.item(), "conf": conf.mean().item()}


def gaussian_noise(x, s):
    return x + 0.15 * s * torch.randn_like(x)


def blur(x, s):
    k = 2 * s + 1
    return F.avg_pool2d(x, k, stride=1, padding=s, count_include_pad=False)


def contrast(x, s):
    m = x.mean(dim=(2, 3), keepdim=True)
    return m + (x - m) * (1.0 - 0.17 * s)


def occlude(x, s):
    x = x.clone()
    w = 2 + s
    r, c = torch.randint(0, IMG - w, (2,))
    x[:, :, r:r + w, c:c + w] = 0.0
    return x


CORRUPTIONS = {"noise": gaussian_noise, "blur": blur, "contrast": contrast, "occlusion": occlude}


def fit(model, templates, steps=150):
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(steps):
        x, y = make_glyph_data(128, templates)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


def main():
    templates = (torch.rand(N_CLASSES, 1, IMG, IMG) > 0.6).float()
    model = SmallCNN()
    t0 = time.time()
    print(f"fit done, last train loss {fit(model, templates):.3f} ({time.time() - t0:.1f}s)", flush=True)

    val_x, val_y = make_glyph_data(N_VAL, templates)
    model.eval()
    metric = CalibrationMetric()
    results = {}
    for rep in range(2):  # two seeds for the random corruptions
        torch.manual_seed(100 + rep)
        for name, fn in CORRUPTIONS.items():
            for severity in range(1, 6):
                with torch.no_grad():
                    for i in range(0, N_VAL, BATCH):
                        xb = fn(val_x[i:i + BATCH], severity)
                        probs = model(xb).softmax(-1)
                        metric.update(probs, val_y[i:i + BATCH])
                r = metric.compute()
                results[(rep, name, severity)] = r
                metric.reset
            print(f"seed {rep} {name:9s} " + "  ".join(
                f"s{s}: acc {results[(rep, name, s)]['acc']:.3f} ece {results[(rep, name, s)]['ece']:.3f}"
                for s in (1, 3, 5)) + f"  ({time.time() - t0:.1f}s)", flush=True)

    mean_acc = sum(r["acc"] for r in results.values()) / len(results)
    print(f"mean corrupted accuracy: {mean_acc:.3f}")


if __name__ == "__main__":
    main()
