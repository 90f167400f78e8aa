# expect: no_leak
# pattern: denoising CNN training keeps a uniform sample of training patches for the end-of-run report with reservoir sampling (Algorithm R, k=2000 copied patch pairs); the reservoir fills during the first ~18% of the stream, afterwards entries are only replaced in place
# step_ms: 30
"""Train a small convolutional denoiser on synthetic texture patches.

A uniform random sample of the training stream (noisy patch, clean patch,
loss when seen) is kept with reservoir sampling so that the end-of-run report
can show how the model does on examples drawn from the whole run, not just the
last batches.
"""
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(31)

N_STEPS = 700
BATCH = 16
PATCH = 32
RESERVOIR = 2000
SEED = 31


class Reservoir:
    """Algorithm R: keeps k items sampled uniformly from everything offered."""

    def __init__(self, k, seed):
        self.k = k
        self.items = []
        self.offered = 0
        self._rng = random.Random(seed)

    def offer(self, item_fn):
        self.offered += 1
        if len(self.items) < self.k:
            self.items.append(item_fn())
            return
        j = self._rng.randrange(self.offered)
        if j < self.k:
            self.items[j] = item_fn()


def texture_batch(rng, n):
    yy, xx = np.mgrid[0:PATCH, 0:PATCH].astype(np.float32) / PATCH
    freq = rng.uniform(2, 9, size=(n, 2, 1, 1)).astype(np.float32)
    phase = rng.uniform(0, 2 * np.pi, size=(n, 2, 1, 1)).astype(np.float32)
    clean = 0.5 * (np.sin(2 * np.pi * freq[:, 0] * xx + phase[:, 0])
                   * np.cos(2 * np.pi * freq[:, 1] * yy + phase[:, 1]))
    clean = clean[:, None]
    sigma = rng.uniform(0.05, 0.3, size=(n, 1, 1, 1)).astype(np.float32)
    noisy = clean + sigma * rng.standard_normal(clean.shape).astype(np.float32)
    return torch.from_numpy(noisy), torch.from_numpy(clean)


class Denoiser(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.inp = nn.Conv2d(1, width, 3, padding=1)
        self.mid = nn.Sequential(
            nn.Conv2d(width, width, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1),
            nn.ReLU(),
        )
        self.out = nn.Conv2d(width, 1, 3, padding=1)

    def forward(self, x):
        h = F.relu(self.inp(x))
        return x - self.out(self.mid(h))


def main():
    rng = np.random.default_rng(SEED)
    model = Denoiser()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    reservoir = Reservoir(RESERVOIR, SEED)

    start = last = time.perf_counter()
    ema = None
    for step in range(1, N_STEPS + 1):
        noisy, clean = texture_batch(rng, BATCH)
        out = model(noisy)
        per_sample = F.mse_loss(out, clean, reduction="none").mean(dim=(1, 2, 3))
        loss = per_sample.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

        losses = per_sample.detach().numpy()
        noisy_np, clean_np = noisy.numpy(), clean.numpy()
        for i in range(BATCH):
            reservoir.offer(lambda i=i: (step, noisy_np[i].copy(), clean_np[i].copy(), float(losses[i])))

        ema = loss.item() if ema is None else 0.97 * ema + 0.03 * loss.item()
        now = time.perf_counter()
        if now - last >= 1.0:
            psnr = 10 * np.log10(0.25 / max(ema, 1e-8))
            print(
                f"[{now - start:5.1f}s] step {step}/{N_STEPS} loss={ema:.5f} "
                f"psnr~{psnr:.1f}dB reservoir={len(reservoir.items)}/{reservoir.offered}",
                flush=True,
            )
            last = now

    steps = np.array([it[0] for it in reservoir.items])
    now_losses = []
    with torch.no_grad():
        for i in range(0, 512, 64):
            chunk = reservoir.items[i:i + 64]
            noisy = torch.from_numpy(np.stack([it[1] for it in chunk]))
            clean = torch.from_numpy(np.stack([it[2] for it in chunk]))
            now_losses.append(F.mse_loss(model(noisy), clean).item())
    now_loss = float(np.mean(now_losses))
    then_loss = np.mean([it[3] for it in reservoir.items[:512]])
    print(f"done in {time.perf_counter() - start:.1f}s; reservoir covers steps "
          f"{steps.min()}..{steps.max()}, loss then {then_loss:.5f} -> now {now_loss:.5f}")


if __name__ == "__main__":
    main()
