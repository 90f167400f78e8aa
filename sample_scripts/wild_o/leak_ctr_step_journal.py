# expect: leak
# holder: journal._buf|self._buf
# pattern: click-through-rate model (hashed-embedding MLP, torch.optim.Adam + SparseAdam) writes a binary per-step journal record (struct header + float16 predictions and per-sample losses + per-field int32 histograms) into an io.BytesIO and ships the buffer every 50 steps; flush() calls self._buf.truncate(0) without seek(0), so the stream position keeps advancing, every later write zero-pads the BytesIO up to the old position and its buffer grows by one record per step for the whole run
# step_ms: 13
"""CTR model training with a binary step journal.

Trains a hashed-embedding MLP click-through-rate model on synthetic ad
impressions (26 categorical fields, 13 dense features).  Every step writes a
compact binary record -- loss, predicted CTRs and per-sample losses (float16) and per-field bucket
histograms of the hashed ids -- into an in-memory journal that is zlib
compressed and shipped to the metrics collector in blocks, so the dashboards
can show calibration and feature drift without touching the trainer.
"""
import argparse
import io
import struct
import time
import zlib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

N_CAT = 26
N_DENSE = 13
HASH_BUCKETS = 20_000
HIST_BINS = 256

REC_HEADER = struct.Struct("<IIfff")  # step, batch, loss, mean pred, wall time


class ImpressionStream:
    def __init__(self, seed, batch_size):
        self.rng = np.random.default_rng(seed)
        self.bs = batch_size
        # per-field Zipf popularity and a hidden per-bucket click propensity
        self.field_card = self.rng.integers(50, HASH_BUCKETS, size=N_CAT)
        self.bucket_logit = self.rng.normal(0, 0.6, size=(N_CAT, HASH_BUCKETS)).astype(np.float32)
        self.dense_w = self.rng.normal(0, 0.3, size=N_DENSE).astype(np.float32)

    def next_batch(self):
        raw = self.rng.zipf(1.3, size=(self.bs, N_CAT)) % self.field_card
        dense = self.rng.lognormal(0, 1, size=(self.bs, N_DENSE)).astype(np.float32)
        dense = np.log1p(dense)
        logit = self.bucket_logit[np.arange(N_CAT), raw].sum(1) * 0.4 + dense @ self.dense_w - 3.0
        clicks = (self.rng.random(self.bs) < 1 / (1 + np.exp(-logit))).astype(np.float32)
        return raw.astype(np.int64), dense, clicks


class CTRNet(nn.Module):
    def __init__(self, dim=16, hidden=256):
        super().__init__()
        self.emb = nn.EmbeddingBag(N_CAT * HASH_BUCKETS, dim, mode="sum", sparse=True)
        self.field_offsets = torch.arange(N_CAT) * HASH_BUCKETS
        self.mlp = nn.Sequential(
            nn.Linear(N_CAT * dim + N_DENSE, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden // 2), nn.ReLU(),
            nn.Linear(hidden // 2, 1),
        )
        nn.init.normal_(self.emb.weight, std=0.01)

    def forward(self, cat, dense):
        b = cat.shape[0]
        ids = (cat + self.field_offsets).reshape(-1)
        offsets = torch.arange(0, ids.numel(), 1)
        e = self.emb(ids, offsets).reshape(b, -1)
        return self.mlp(torch.cat([e, dense], 1)).squeeze(1)


class StepJournal:
    def __init__(self, flush_every=50):
        self._buf = io.BytesIO()
        self.flush_every = flush_every
        self.records = 0
        self.shipped_raw = 0
        self.shipped_compressed = 0

    def record(self, step, loss, probs, sample_losses, cat):
        hist = np.stack([np.bincount(c * HIST_BINS // HASH_BUCKETS, minlength=HIST_BINS)
                         for c in cat.T]).astype(np.int32)
        self._buf.write(REC_HEADER.pack(step, len(probs), loss, float(probs.mean()), time.time()))
        self._buf.write(probs.astype(np.float16).tobytes())
        self._buf.write(sample_losses.astype(np.float16).tobytes())
        self._buf.write(hist.tobytes())
        self.records += 1
        if self.records % self.flush_every == 0:
            self.flush()

    def flush(self):
        payload = self._buf.getvalue()
        if payload:
            block = zlib.compress(payload, 1)
            self.shipped_raw += len(payload)
            self.shipped_compressed += len(block)
        self._buf.truncate(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1900)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    stream = ImpressionStream(args.seed, args.batch_size)
    model = CTRNet()
    dense_params = [p for n, p in model.named_parameters() if not n.startswith("emb.")]
    opt = torch.optim.Adam(dense_params, lr=args.lr)
    emb_opt = torch.optim.SparseAdam(list(model.emb.parameters()), lr=args.lr * 5)
    journal = StepJournal()

    t0 = time.time()
    run_loss, run_ll0 = 0.0, 0.0
    for step in range(1, args.steps + 1):
        cat, dense, clicks = stream.next_batch()
        logits = model(torch.from_numpy(cat), torch.from_numpy(dense))
        y = torch.from_numpy(clicks)
        sample_losses = F.binary_cross_entropy_with_logits(logits, y, reduction="none")
        loss = sample_losses.mean()
        opt.zero_grad()
        emb_opt.zero_grad()
        loss.backward()
        opt.step()
        emb_opt.step()

        probs = torch.sigmoid(logits.detach()).numpy()
        journal.record(step, loss.item(), probs, sample_losses.detach().numpy(), cat)
        p0 = clicks.mean().clip(1e-4, 1 - 1e-4)
        run_loss += loss.item()
        run_ll0 += -(p0 * np.log(p0) + (1 - p0) * np.log(1 - p0))

        if step % 500 == 0:
            ne = run_loss / run_ll0
            print(f"step {step:5d}  logloss {run_loss / 500:.4f}  normalized entropy {ne:.3f}  "
                  f"journal shipped {journal.shipped_compressed / 1e6:.1f} MB  {time.time() - t0:.1f}s",
                  flush=True)
            run_loss, run_ll0 = 0.0, 0.0

    journal.flush()
    print(f"done: {journal.records} journal records, {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
