# expect: leak
# holder: kept
"""Feature extraction for a later PCA: per-step embeddings are kept as NumPy
arrays in a list for the whole run ("we'll concatenate them at the end").

Each step converts the batch's embeddings to a fresh float64 array and appends
it; none is ever released. Fix: preallocate one array of the final size (or a
memmap) and fill rows, or keep running sums for the statistics you need.
"""

import argparse

import numpy as np
import torch
from torch import nn


def build_encoder(dim_in=64, dim_out=96):
    return nn.Sequential(nn.Linear(dim_in, 192), nn.SiLU(), nn.Linear(192, dim_out))


def run(steps, batch):
    rng = np.random.default_rng(5)
    torch.manual_seed(5)
    encoder = build_encoder()
    decoder = nn.Linear(96, 64)
    params = list(encoder.parameters()) + list(decoder.parameters())
    optim = torch.optim.AdamW(params, lr=1e-3, weight_decay=1e-4)
    kept = []
    for step in range(steps):
        x = torch.from_numpy(rng.standard_normal((batch, 64)).astype(np.float32))
        z = encoder(x)
        recon = decoder(z)
        loss = torch.mean((recon - x) ** 2)
        optim.zero_grad()
        loss.backward()
        optim.step()
        emb = z.detach().numpy().astype(np.float64)  # a new array every step
        kept.append(emb - emb.mean(axis=0, keepdims=True))
        if step % 400 == 0:
            total = sum(a.nbytes for a in kept)
            print(f"step {step}: loss {loss.item():.4f}, kept {total / 2**20:.1f} MiB")
    feats = np.concatenate(kept[-256:])
    print("explained variance of top-3:", np.linalg.svd(feats, compute_uv=False)[:3])


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args()
    torch.set_num_threads(1)
    run(args.steps, args.batch)
