# expect: no_leak
# pattern: document-digitisation inference worker (PyTorch CPU under torch.inference_mode, model.eval(), no optimizer, no training, one thread; one step = one scanned page: render a synthetic page with Pillow, cut its layout regions and classify each region (text / table / figure / formula / noise) with a small fully-convolutional CNN at native resolution whose nearest-class-mean head is set once from 10 gold pages, the crop only zero-padded up to a multiple of 32, ~120 ms per page of ~9 regions, code in main() + a RegionNet nn.Module + page/region helpers); the padded crops come in ~170 different height x width combinations (7 conv layers each, ~1200 layer-shape pairs), and for every new one oneDNN (mkldnn) builds and caches a new primitive (JIT-compiled kernel + descriptors and scratch, ~0.5 MB) per layer and input shape in its process-wide primitive cache; RSS therefore climbs steadily by ~700 MB over the first half of the run, which looks exactly like a per-request leak, but the cache is an LRU capped at 1024 primitives (ONEDNN_PRIMITIVE_CACHE_CAPACITY default), so once it is full new shapes evict old primitives and memory goes flat; nothing Python-side is kept per page except float counters
# step_ms: 120
"""Layout-region classifier worker for the digitisation pipeline.

Pages come in as greyscale scans; the layout step proposes regions; each
region is classified at native resolution by a small fully-convolutional
network (no resizing: thin table rules and small print survive intact).
"""

import time
from collections import Counter

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image, ImageDraw

torch.set_num_threads(1)
torch.manual_seed(3)

PAGE_W, PAGE_H = 1000, 1300
N_PAGES = 135
CLASSES = ("text", "table", "figure", "formula", "noise")


class RegionNet(nn.Module):
    def __init__(self, n_classes=len(CLASSES)):
        super().__init__()
        chans = [(1, 16, 1), (16, 32, 2), (32, 32, 1), (32, 64, 2), (64, 64, 1), (64, 96, 2), (96, 96, 1)]
        self.convs = nn.ModuleList(nn.Conv2d(i, o, 3, stride=s, padding=1) for i, o, s in chans)
        self.bns = nn.ModuleList(nn.BatchNorm2d(o) for _, o, _ in chans)
        self.head = nn.Linear(2 * 96, n_classes)

    def features(self, x):
        for conv, bn in zip(self.convs, self.bns):
            x = F.relu(bn(conv(x)))
        f = torch.cat([x.mean(dim=(2, 3)), x.amax(dim=(2, 3))], dim=1)
        return F.normalize(f, dim=1)

    def forward(self, x):
        return self.head(self.features(x))

    @torch.no_grad()
    def set_prototypes(self, feats, labels):
        """Nearest-class-mean head from a handful of gold-labelled regions."""
        for c in range(self.head.out_features):
            m = feats[labels == c].mean(dim=0)
            self.head.weight[c] = m / m.norm() * 20.0
            self.head.bias[c] = 0.0


def render_page(rng):
    """Synthetic scan: columns of text lines, a table, a figure, formulas."""
    img = Image.new("L", (PAGE_W, PAGE_H), 245)
    d = ImageDraw.Draw(img)
    regions = []
    y = 60
    while y < PAGE_H - 120:
        kind = rng.choice(CLASSES[:4], p=[0.55, 0.15, 0.15, 0.15])
        x0 = int(rng.integers(40, 140))
        w = int(rng.integers(220, PAGE_W - x0 - 40))
        h = int(rng.integers(40, 260))
        h = min(h, PAGE_H - 60 - y)
        box = (x0, y, x0 + w, y + h)
        if kind == "text":
            for ly in range(y + 4, y + h - 10, 14):
                lx = x0
                while lx < x0 + w - 20:
                    ww = int(rng.integers(8, 60))
                    d.rectangle((lx, ly, min(lx + ww, x0 + w), ly + 8), fill=int(rng.integers(20, 70)))
                    lx += ww + 6
        elif kind == "table":
            rows, cols = int(rng.integers(3, 9)), int(rng.integers(2, 7))
            for r in range(rows + 1):
                yy = y + r * (h - 1) // rows
                d.line((x0, yy, x0 + w, yy), fill=30, width=1)
            for c in range(cols + 1):
                xx = x0 + c * (w - 1) // cols
                d.line((xx, y, xx, y + h), fill=30, width=1)
        elif kind == "figure":
            pts = [(x0 + i * w / 40, y + h / 2 + h * 0.4 * np.sin(i / 4 + rng.uniform(0, 6))) for i in range(41)]
            d.line(pts, fill=40, width=2)
            d.rectangle(box, outline=90)
        else:
            for k in range(int(rng.integers(2, 7))):
                cx = x0 + int(rng.integers(0, max(1, w - 30)))
                d.text((cx, y + h // 3), "∑x²/∂y = λ" if k % 2 else "(a+b)^n", fill=20)
        regions.append((kind, box))
        y += h + int(rng.integers(15, 50))
    for _ in range(int(rng.integers(1, 4))):   # specks / stains
        x0, y0 = int(rng.integers(0, PAGE_W - 80)), int(rng.integers(0, PAGE_H - 80))
        box = (x0, y0, x0 + int(rng.integers(30, 80)), y0 + int(rng.integers(30, 80)))
        d.ellipse(box, fill=int(rng.integers(120, 200)))
        regions.append(("noise", box))
    arr = np.asarray(img, dtype=np.float32) / 255.0
    arr += rng.normal(0, 0.03, size=arr.shape).astype(np.float32)   # scanner noise
    return arr, regions


def to_input(page, box, mult=32):
    x0, y0, x1, y1 = box
    crop = torch.from_numpy(1.0 - page[y0:y1, x0:x1]).unsqueeze(0).unsqueeze(0)
    h, w = crop.shape[-2:]
    ph, pw = (-h) % mult, (-w) % mult
    return F.pad(crop, (0, pw, 0, ph))


def main():
    rng = np.random.default_rng(5)
    model = RegionNet().eval()
    stats = Counter()
    shapes = set()
    n_regions = 0
    t0 = last = time.perf_counter()
    with torch.inference_mode():
        gold_f, gold_y = [], []
        for _ in range(10):                       # gold pages from the annotation team
            page, regions = render_page(rng)
            for kind, box in regions:
                gold_f.append(model.features(to_input(page, box)))
                gold_y.append(CLASSES.index(kind))
    model.set_prototypes(torch.cat(gold_f), torch.tensor(gold_y))
    del gold_f
    with torch.inference_mode():
        for page_no in range(N_PAGES):
            page, regions = render_page(rng)
            for kind, box in regions:
                x = to_input(page, box)
                shapes.add(tuple(x.shape[-2:]))
                logits = model(x)
                pred = CLASSES[int(logits.argmax())]
                stats[(kind, pred)] += 1
                n_regions += 1
            now = time.perf_counter()
            if now - last >= 1.0:
                last = now
                by_pred = Counter()
                for (_, p), v in stats.items():
                    by_pred[p] += v
                agree = sum(v for (k, p), v in stats.items() if k == p) / n_regions
                mix = " ".join(f"{c}={by_pred[c] / n_regions:.2f}" for c in CLASSES) + f" agree={agree:.2f}"
                print(f"page {page_no:3d} regions={n_regions} distinct_shapes={len(shapes)} {mix}", flush=True)
    print(f"done: {N_PAGES} pages, {n_regions} regions, {len(shapes)} input shapes, "
          f"{time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
