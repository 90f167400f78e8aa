# expect: no_leak
# pattern: evaluation-only kNN monitor (no optimizer) for a sequence of encoder "checkpoints"; the feature bank and label bank are allocated once with torch.empty(N_BANK, D) and overwritten in place (bank[ptr:ptr+B].copy_(feats)) on every sweep, queries are scored in fixed-size chunks, and only scalar accuracies are kept per checkpoint, so RSS jumps once at start and then stays flat
# step_ms: 125
"""Weighted kNN accuracy of a self-supervised encoder across checkpoints.

Standard SSL monitoring (as in DINO / InstDisc): embed a labelled "memory"
split with the frozen encoder, L2-normalise, then classify held-out queries
by a temperature-weighted vote of their k=20 nearest neighbours in the
memory bank.  Here the checkpoints are simulated by drifting the encoder
weights between sweeps (EMA-style), and the images are synthetic textures
(class-specific oriented gratings + colour bias + noise).
"""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

N_CLS = 20
N_BANK = 4096
N_QUERY = 1024
BATCH = 256
DIM = 512
K = 20
TEMP = 0.07
N_CHECKPOINTS = 10


def textures(n, gen):
    y = torch.randint(0, N_CLS, (n,), generator=gen)
    theta = y.float() * math.pi / N_CLS
    freq = 2 + (y % 4).float()
    g = torch.linspace(-1, 1, 32)
    yy, xx = torch.meshgrid(g, g, indexing="ij")
    phase = torch.rand(n, generator=gen)[:, None, None] * 6.28
    wave = torch.sin(freq[:, None, None] * math.pi * (xx * torch.cos(theta)[:, None, None]
                                                      + yy * torch.sin(theta)[:, None, None]) + phase)
    colour = torch.stack([torch.cos(theta), torch.sin(theta), torch.cos(2 * theta)], 1)[:, :, None, None]
    x = wave[:, None] * (0.6 + 0.4 * colour) + 1.5 * torch.randn(n, 3, 32, 32, generator=gen)
    return x, y


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
            nn.Flatten(), nn.Linear(256, DIM),
        )

    def forward(self, x):
        return self.net(x)


@torch.no_grad()
def fill_bank(encoder, bank, bank_labels, seed):
    gen = torch.Generator().manual_seed(seed)
    for ptr in range(0, N_BANK, BATCH):
        x, y = textures(BATCH, gen)
        bank[ptr:ptr + BATCH].copy_(F.normalize(encoder(x), dim=1))
        bank_labels[ptr:ptr + BATCH].copy_(y)


@torch.no_grad()
def knn_accuracy(encoder, bank, bank_labels, seed, chunk=256):
    gen = torch.Generator().manual_seed(seed)
    correct = 0
    for _ in range(0, N_QUERY, chunk):
        x, y = textures(chunk, gen)
        q = F.normalize(encoder(x), dim=1)
        sim, idx = (q @ bank.T).topk(K, dim=1)
        w = (sim / TEMP).exp()
        votes = torch.zeros(chunk, N_CLS).scatter_add_(1, bank_labels[idx], w)
        correct += (votes.argmax(1) == y).sum().item()
    return correct / N_QUERY


def main():
    torch.manual_seed(0)
    encoder = Encoder().eval()
    bank = torch.empty(N_BANK, DIM)
    bank_labels = torch.empty(N_BANK, dtype=torch.long)
    history = []
    t0 = time.time()
    for ckpt in range(N_CHECKPOINTS):
        fill_bank(encoder, bank, bank_labels, seed=ckpt)
        acc = knn_accuracy(encoder, bank, bank_labels, seed=10_000 + ckpt)
        history.append(acc)
        print(f"checkpoint {ckpt}  kNN@{K} acc {acc:.3f}  ({time.time() - t0:.1f}s)", flush=True)
        with torch.no_grad():  # next "checkpoint": drift the weights
            for p in encoder.parameters():
                p.mul_(0.9).add_(0.3 * torch.randn_like(p) * p.std().clamp_min(1e-3))
    best = max(range(N_CHECKPOINTS), key=history.__getitem__)
    print(f"best checkpoint {best} with {history[best]:.3f}")


if __name__ == "__main__":
    main()
