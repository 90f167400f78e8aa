# expect: no_leak
# holder: none
# pattern: evaluation-only export job (no optimizer, torch.no_grad) accumulates one shard's features in lists, PCA-compresses and writes them, then clears the lists: sawtooth memory with a flat baseline
# step_ms: 15
"""Offline embedding export for a product-search index (data/eval pipeline).

A frozen EmbeddingBag + MLP encoder (random weights stand in for a checkpoint)
encodes synthetic token sequences shard by shard. Each shard's 1024-d features
are collected in a list, concatenated, PCA-compressed to 64 dims, saved with
``np.save`` as float16, and the lists are cleared before the next shard. Memory
rises and falls once per shard (sawtooth, tens of MB) but does not trend upward.
"""
import os
import tempfile
import time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(8)

VOCAB, HID, OUT_DIM = 50_000, 1024, 64


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, 128, mode="mean")
        self.proj = nn.Sequential(nn.Linear(128, HID), nn.GELU(), nn.Linear(HID, HID), nn.GELU())

    def forward(self, tokens, offsets):
        return self.proj(self.emb(tokens, offsets))


def make_batch(rng, batch_size):
    lengths = rng.integers(5, 40, size=batch_size)
    tokens = torch.from_numpy(rng.zipf(1.3, size=lengths.sum()) % VOCAB)
    offsets = torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)[:-1]]))
    return tokens, offsets


feature_chunks = []
id_chunks = []


def export_shard(model, shard_id, n_items, out_dir, batch_size=256):
    rng = np.random.default_rng(shard_id)
    n_batches = 0
    with torch.no_grad():
        for start in range(0, n_items, batch_size):
            bs = min(batch_size, n_items - start)
            tokens, offsets = make_batch(rng, bs)
            feature_chunks.append(model(tokens, offsets))
            id_chunks.append(np.arange(start, start + bs) + shard_id * 10_000_000)
            n_batches += 1
        feats = torch.cat(feature_chunks)
        feats = feats - feats.mean(0, keepdim=True)
        _, s, v = torch.pca_lowrank(feats, q=OUT_DIM, center=False, niter=2)
        reduced = F.normalize(feats @ v, dim=1).numpy().astype(np.float16)
    explained = float((s ** 2).sum() / (feats ** 2).sum())
    np.save(os.path.join(out_dir, f"emb_{shard_id:03d}.npy"), reduced)
    np.save(os.path.join(out_dir, f"ids_{shard_id:03d}.npy"), np.concatenate(id_chunks))
    feature_chunks.clear()
    id_chunks.clear()
    return n_batches, explained


def main():
    model = Encoder().eval()
    t0 = time.time()
    last = t0
    total_batches = 0
    shard = 0
    with tempfile.TemporaryDirectory(prefix="emb_export_") as out_dir:
        while time.time() - t0 < 17.0:
            nb, ev = export_shard(model, shard, n_items=8_000, out_dir=out_dir)
            total_batches += nb
            shard += 1
            if time.time() - last > 4:
                last = time.time()
                size_mb = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir)) / 2 ** 20
                print(f"{shard} shards exported (PCA explained var {ev:.2f}), {size_mb:.1f} MB on disk ({last - t0:.1f}s)")
    print(f"{shard} shards, {total_batches} batches, {1000 * (time.time() - t0) / total_batches:.1f} ms/batch")


if __name__ == "__main__":
    main()
