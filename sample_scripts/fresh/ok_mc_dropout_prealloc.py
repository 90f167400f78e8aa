# expect: no_leak
# pattern: inference-only MC-dropout passes under torch.no_grad() write into preallocated numpy arrays (running sums, argmax votes); nothing grows after the first pass
# step_ms: 12
"""Active-learning acquisition: score an unlabeled pool with MC dropout.

The classifier (a stand-in for a trained checkpoint) is run over the whole
pool many times with dropout left on. Every pass writes its softmax outputs
into preallocated arrays: ``prob_sum`` / ``prob_sq_sum`` (for mean and
variance) and ``votes`` (argmax counts), indexed by the batch's slice of
the pool. Everything runs under ``torch.no_grad()``; per-batch tensors are
converted with ``.numpy()`` and added in place, and nothing per-pass is
kept. The arrays' pages are first touched during the first pass, then
memory is flat. At the end the BALD-style score picks the samples to label.
"""

import argparse
import random
import time

import numpy as np
import torch
import torch.nn as nn

N_POOL = 24_000
D_IN = 48
N_CLASSES = 10


class MCDropoutNet(nn.Module):
    def __init__(self, p=0.25):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(D_IN, 512),
            nn.ReLU(),
            nn.Dropout(p),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Dropout(p),
            nn.Linear(512, N_CLASSES),
        )

    def forward(self, x):
        return self.net(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1300, help="batches (all passes together)")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--top-k", type=int, default=500)
    ap.add_argument("--seed", type=int, default=41)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    rng = np.random.default_rng(args.seed)

    centers = rng.normal(size=(N_CLASSES, D_IN)).astype(np.float32)
    pool = torch.from_numpy(
        centers[rng.integers(0, N_CLASSES, N_POOL)]
        + 1.5 * rng.standard_normal((N_POOL, D_IN)).astype(np.float32)
    )

    model = MCDropoutNet()
    model.train()  # keep dropout active: that's the point of MC dropout

    prob_sum = np.zeros((N_POOL, N_CLASSES), dtype=np.float64)
    prob_sq_sum = np.zeros((N_POOL, N_CLASSES), dtype=np.float64)
    votes = np.zeros((N_POOL, N_CLASSES), dtype=np.int32)
    entropy_sum = np.zeros(N_POOL, dtype=np.float64)

    batches_per_pass = (N_POOL + args.batch - 1) // args.batch
    n_passes = max(1, args.steps // batches_per_pass)
    print(f"{n_passes} MC passes x {batches_per_pass} batches")

    t0 = time.time()
    step = 0
    with torch.no_grad():
        for mc_pass in range(n_passes):
            for start in range(0, N_POOL, args.batch):
                sl = slice(start, min(start + args.batch, N_POOL))
                probs = model(pool[sl]).softmax(dim=1).numpy()
                prob_sum[sl] += probs
                prob_sq_sum[sl] += probs**2
                votes[sl, probs.argmax(1)] += 1
                entropy_sum[sl] -= (probs * np.log(probs + 1e-12)).sum(1)
                step += 1
            ms = (time.time() - t0) / step * 1e3
            mean = prob_sum / (mc_pass + 1)
            print(
                f"pass {mc_pass + 1:3d}/{n_passes}  mean max-prob {mean.max(1).mean():.3f}  {ms:.1f} ms/batch",
                flush=True,
            )

    mean = prob_sum / n_passes
    var = prob_sq_sum / n_passes - mean**2
    predictive_entropy = -(mean * np.log(mean + 1e-12)).sum(1)
    bald = predictive_entropy - entropy_sum / n_passes
    chosen = np.argsort(-bald)[: args.top_k]
    print(
        f"selected {len(chosen)} samples; mean BALD {bald[chosen].mean():.4f}, mean var {var[chosen].mean():.5f}"
    )


if __name__ == "__main__":
    main()
