# expect: leak
# holder: recent|stream_batches
# pattern: generator-local list that grows across yields (kept "for hard-example replay")
# step_ms: 2.5
"""Autoencoder on a synthetic sensor stream, fed by a generator.

``stream_batches()`` is a generator that synthesises batches of multichannel
sensor windows forever. Somebody added a ``recent`` list to it so that hard
examples could be replayed later ("re-yield every 50th batch from recent"),
but nothing ever trims it: the generator's frame keeps every batch it has
produced (32x8x64 float32 = 64 KiB per step).

Fix: ``recent = collections.deque(maxlen=K)``.
"""

import argparse
import itertools
import math
import time

import torch
from torch import nn


def stream_batches(batch, channels, length, seed):
    g = torch.Generator().manual_seed(seed)
    t = torch.linspace(0, 2 * math.pi, length)
    recent = []
    for i in itertools.count():
        if i and i % 50 == 0 and recent:
            j = torch.randint(0, len(recent), (1,), generator=g).item()
            yield recent[j]
            continue
        freq = 1 + 4 * torch.rand(batch, channels, 1, generator=g)
        phase = 2 * math.pi * torch.rand(batch, channels, 1, generator=g)
        x = torch.sin(freq * t + phase) + 0.1 * torch.randn(batch, channels, length, generator=g)
        recent.append(x)
        yield x


class ConvAE(nn.Module):
    def __init__(self, channels, hidden=32):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv1d(channels, hidden, 5, stride=2, padding=2),
            nn.ReLU(),
            nn.Conv1d(hidden, hidden, 5, stride=2, padding=2),
            nn.ReLU(),
        )
        self.dec = nn.Sequential(
            nn.ConvTranspose1d(hidden, hidden, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.ConvTranspose1d(hidden, channels, 4, stride=2, padding=1),
        )

    def forward(self, x):
        return self.dec(self.enc(x))


def run(args):
    torch.manual_seed(args.seed)
    model = ConvAE(args.channels)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    batches = stream_batches(args.batch, args.channels, args.length, args.seed)
    ema = None
    t0 = time.time()
    for step, x in enumerate(itertools.islice(batches, args.steps)):
        recon = model(x)
        loss = nn.functional.mse_loss(recon, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        if step % 500 == 0:
            print(f"step {step:5d}  recon {ema:.4f}  [{time.time() - t0:5.1f}s]", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="sensor autoencoder")
    ap.add_argument("--steps", type=int, default=4500)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--channels", type=int, default=8)
    ap.add_argument("--length", type=int, default=64)
    ap.add_argument("--seed", type=int, default=17)
    torch.set_num_threads(1)
    run(ap.parse_args())
