# expect: leak
# holder: samples
# pattern: evaluation-only loop (no optimizer, under no_grad) keeps a per-sample dict of numpy arrays in a defaultdict(list) on the metrics object
# step_ms: 240
"""Offline evaluation of an image classifier over a long stream of
validation shards, collecting per-sample records for later error analysis.

There is no training here: the model is put in eval mode, everything runs
under ``torch.no_grad()``, and ``EvalMetrics.update`` computes top-1/top-5
accuracy and calibration bins. It also appends, for every sample, a dict
with the softmax vector and the pooled embedding as numpy arrays to
``self.samples[shard_name]`` (a ``defaultdict(list)``) "so we can build the
confusion browser afterwards". On a long evaluation stream that is the
entire prediction matrix and embedding matrix, sample by sample. Because
``probs[i].numpy()`` is a view of the batch tensor, each record keeps its
whole batch's softmax alive anyway.

Fix: write the per-sample arrays to disk (np.memmap / parquet) as you go, or
keep only what the report needs (argmax, top-5 ids, loss) as Python scalars.
"""

import argparse
import random
import time
from collections import defaultdict

import numpy as np
import torch
import torch.nn as nn

N_CLASSES = 1000
EMB_DIM = 512


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()

        def block(cin, cout, stride):
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                nn.BatchNorm2d(cout),
                nn.ReLU(inplace=True),
            )

        self.features = nn.Sequential(
            block(3, 32, 2),
            block(32, 64, 1),
            block(64, 128, 2),
            block(128, 128, 1),
            block(128, 128, 1),
            block(128, EMB_DIM, 2),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.classifier = nn.Linear(EMB_DIM, N_CLASSES)

    def forward(self, x):
        emb = self.features(x)
        return self.classifier(emb), emb


class EvalMetrics:
    def __init__(self, n_bins=15):
        self.n_bins = n_bins
        self.correct1 = 0
        self.correct5 = 0
        self.count = 0
        self.bin_conf = np.zeros(n_bins)
        self.bin_acc = np.zeros(n_bins)
        self.bin_n = np.zeros(n_bins)
        self.samples = defaultdict(list)

    def update(self, shard, ids, logits, emb, labels):
        probs = logits.softmax(dim=1)
        top5 = probs.topk(5, dim=1).indices
        hit1 = top5[:, 0] == labels
        self.correct1 += hit1.sum().item()
        self.correct5 += (top5 == labels[:, None]).any(1).sum().item()
        self.count += labels.numel()

        conf = probs.max(1).values.numpy()
        bins = np.minimum((conf * self.n_bins).astype(int), self.n_bins - 1)
        np.add.at(self.bin_conf, bins, conf)
        np.add.at(self.bin_acc, bins, hit1.numpy().astype(float))
        np.add.at(self.bin_n, bins, 1)

        for i, sid in enumerate(ids):
            self.samples[shard].append(
                {
                    "id": sid,
                    "label": int(labels[i]),
                    "probs": probs[i].numpy(),
                    "embedding": emb[i].numpy(),
                }
            )

    def summary(self):
        nz = self.bin_n > 0
        ece = np.sum(np.abs(self.bin_acc[nz] - self.bin_conf[nz])) / self.count
        return self.correct1 / self.count, self.correct5 / self.count, ece


def shard_stream(n_shards, batches_per_shard, batch, seed):
    gen = torch.Generator().manual_seed(seed)
    sid = 0
    for s in range(n_shards):
        for _ in range(batches_per_shard):
            labels = torch.randint(0, N_CLASSES, (batch,), generator=gen)
            base = (labels % 7).float().view(-1, 1, 1, 1) / 7
            images = base + 0.5 * torch.randn(batch, 3, 48, 48, generator=gen)
            ids = [f"val-{s:03d}-{sid + i:07d}" for i in range(batch)]
            sid += batch
            yield f"shard-{s:03d}", ids, images, labels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60, help="evaluation batches")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seed", type=int, default=23)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)

    model = Backbone().eval()  # stands in for a loaded checkpoint
    metrics = EvalMetrics()
    batches_per_shard = 10
    n_shards = (args.steps + batches_per_shard - 1) // batches_per_shard

    t0 = time.time()
    with torch.no_grad():
        for step, (shard, ids, images, labels) in enumerate(
            shard_stream(n_shards, batches_per_shard, args.batch, args.seed), start=1
        ):
            if step > args.steps:
                break
            logits, emb = model(images)
            metrics.update(shard, ids, logits, emb, labels)
            if step % 10 == 0:
                top1, top5, ece = metrics.summary()
                ms = (time.time() - t0) / step * 1e3
                print(
                    f"[{shard}] batch {step:4d}  top1 {top1:.3f}  top5 {top5:.3f}  ece {ece:.3f}  {ms:.0f} ms/batch",
                    flush=True,
                )

    top1, top5, ece = metrics.summary()
    n = sum(len(v) for v in metrics.samples.values())
    print(f"final: top1 {top1:.3f}  top5 {top5:.3f}  ece {ece:.3f}  ({n} per-sample records)")


if __name__ == "__main__":
    main()
