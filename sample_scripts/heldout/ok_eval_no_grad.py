# expect: no_leak
# pattern: evaluation under torch.no_grad() (no optimizer): only argmax predictions kept
# step_ms: 300
"""Offline evaluation of a texture classifier ensemble (3 "checkpoints" of the
same ResNet-ish architecture, random weights here) over a held-out set:
accuracy, per-class confusion matrix and the ensemble's mean confidence.

Everything runs under ``torch.no_grad()``. Per batch only the argmax
predictions (int64, 32 per batch) are kept for the final report, and the
confusion matrix is a fixed-size array updated in place.

Memory: the activations of each batch come and go; the kept predictions
grow by 256 bytes per batch. Flat.
"""

import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(cin, cout, stride=1):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)
    )


class TextureNet(nn.Module):
    def __init__(self, n_classes, width):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, width, 4, 4, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            conv_bn(width, width),
            conv_bn(width, width),
            conv_bn(width, 2 * width, stride=2),
            conv_bn(2 * width, 2 * width),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(2 * width, n_classes),
        )

    def forward(self, x):
        return self.net(x)


def texture_batch(batch, size, n_classes, gen):
    y = torch.randint(0, n_classes, (batch,), generator=gen)
    freq = (1 + y.float())[:, None, None] * 0.15
    coords = torch.arange(size, dtype=torch.float32)
    grid = coords[None, :, None] * freq + coords[None, None, :] * freq.flip(0) * 0.5
    x = torch.sin(grid)[:, None].expand(batch, 3, size, size).clone()
    x += 0.5 * torch.randn(x.shape, generator=gen)
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=50)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--classes", type=int, default=16)
    ap.add_argument("--width", type=int, default=176)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    ensemble = [TextureNet(args.classes, args.width).eval() for _ in range(3)]
    confusion = np.zeros((args.classes, args.classes), dtype=np.int64)
    preds, confs = [], []
    t0 = time.perf_counter()
    with torch.no_grad():
        for b in range(args.batches):
            x, y = texture_batch(args.batch_size, 64, args.classes, gen)
            probs = torch.stack([F.softmax(m(x), -1) for m in ensemble]).mean(0)
            p = probs.argmax(1)
            np.add.at(confusion, (y.numpy(), p.numpy()), 1)
            preds.append(p)
            confs.append(probs.max(1).values.mean().item())
            if b % 10 == 0:
                print(
                    f"batch {b:3d}  {(time.perf_counter() - t0) / (b + 1):.3f}s/batch", flush=True
                )
    acc = np.trace(confusion) / confusion.sum()
    print(
        f"accuracy {acc:.3f}, mean confidence {np.mean(confs):.3f}, "
        f"{len(torch.cat(preds))} predictions"
    )


if __name__ == "__main__":
    main()
