# expect: leak
# holder: bank|MemoryBank
# pattern: nn.Module memory bank grown with torch.cat every step and never truncated (one tensor, bytes grow)
# step_ms: 18
"""Self-supervised contrastive pre-training (MoCo-style) on synthetic tabular
"sensor" vectors.

Two noisy views of each sample go through the encoder; the query is matched to
its own key against negatives drawn from a memory bank of past keys. The bank
lives on the loss module as a registered buffer so it moves with ``.to()``.

The bank was meant to stay a FIFO of ``bank_size`` keys, but ``push`` only ever
does ``self.bank = torch.cat([self.bank, k.detach()])``: the truncation to the
last ``bank_size`` rows was lost in a refactor. The number of live tensors is
constant (one bank, replaced each step) while its size grows by
``batch * dim * 4`` bytes every step, and each ``cat`` copies the whole bank.

Fix: preallocate ``bank = torch.zeros(bank_size, dim)`` and write keys into it
as a ring buffer with a pointer, or slice ``self.bank[-self.bank_size:]``
after the cat.
"""

import argparse
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, d_in=128, d_hidden=1024, d_out=128):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_in, d_hidden),
            nn.BatchNorm1d(d_hidden),
            nn.ReLU(),
            nn.Linear(d_hidden, d_hidden),
            nn.ReLU(),
            nn.Linear(d_hidden, d_out),
        )

    def forward(self, x):
        return F.normalize(self.net(x), dim=1)


class MemoryBank(nn.Module):
    """Contrastive loss with a queue of negative keys."""

    def __init__(self, dim, bank_size=4096, temperature=0.1, n_neg=1024):
        super().__init__()
        self.bank_size = bank_size
        self.temperature = temperature
        self.n_neg = n_neg
        # seeded with random unit vectors so there are negatives from step 1
        self.register_buffer("bank", F.normalize(torch.randn(n_neg, dim), dim=1))

    @torch.no_grad()
    def push(self, keys):
        self.bank = torch.cat([self.bank, keys.detach()], dim=0)

    def negatives(self):
        idx = torch.randint(0, self.bank.shape[0], (self.n_neg,))
        return self.bank[idx]

    def forward(self, q, k):
        pos = (q * k).sum(dim=1, keepdim=True)
        neg = q @ self.negatives().t()
        logits = torch.cat([pos, neg], dim=1) / self.temperature
        labels = torch.zeros(q.shape[0], dtype=torch.long)
        return F.cross_entropy(logits, labels)


def make_dataset(n, d, n_clusters, rng):
    centers = rng.normal(size=(n_clusters, d)).astype(np.float32) * 2.0
    assign = rng.integers(0, n_clusters, size=n)
    x = centers[assign] + rng.normal(size=(n, d)).astype(np.float32)
    return torch.from_numpy(x)


def augment(x):
    scale = 1.0 + 0.1 * torch.randn(x.shape[0], 1)
    drop = (torch.rand_like(x) > 0.1).float()
    return x * scale * drop + 0.05 * torch.randn_like(x)


@torch.no_grad()
def momentum_update(online, target, m=0.99):
    for p_o, p_t in zip(online.parameters(), target.parameters()):
        p_t.mul_(m).add_(p_o.detach(), alpha=1 - m)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--batch", type=int, default=96)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    rng = np.random.default_rng(args.seed)

    data = make_dataset(20_000, 128, 32, rng)
    q_enc = Encoder()
    k_enc = Encoder()
    k_enc.load_state_dict(q_enc.state_dict())
    for p in k_enc.parameters():
        p.requires_grad_(False)
    criterion = MemoryBank(dim=128)
    opt = torch.optim.SGD(q_enc.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)

    t0 = time.time()
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, data.shape[0], (args.batch,))
        x = data[idx]
        q = q_enc(augment(x))
        with torch.no_grad():
            k = k_enc(augment(x))
        loss = criterion(q, k)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        momentum_update(q_enc, k_enc)
        criterion.push(k)

        if step % 100 == 0:
            ms = (time.time() - t0) / step * 1e3
            print(
                f"step {step:5d}  loss {loss.item():.4f}  bank {criterion.bank.shape[0]}  {ms:.1f} ms/step",
                flush=True,
            )

    print("done")


if __name__ == "__main__":
    main()
