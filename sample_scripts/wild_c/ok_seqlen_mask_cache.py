# expect: no_leak
# holder:
# pattern: transformer LM with length-bucketed batches caches causal masks and position ids in a dict keyed by seq_len only; the dict fills during the first epoch (5 buckets) and then only hits
# step_ms: 75
"""Tiny GPT-style LM, batches bucketed by length, with a per-length mask cache.

The model keeps ``self.mask_cache`` / ``self.pos_cache`` dicts that grow when
a new sequence length appears.  Because the sampler buckets sequences to one
of five lengths, the caches stop growing after the first few steps and every
later lookup is a hit.  The padding mask is built per batch (cheap, not
cached).  Cosine LR with warmup, gradient clipping, validation each epoch.
"""
import math
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

torch.set_num_threads(1)
torch.manual_seed(0)

VOCAB, PAD = 200, 0
BUCKETS = (16, 24, 32, 40, 48)


class BucketedCorpus(Dataset):
    def __init__(self, n, seed):
        rng = random.Random(seed)
        g = torch.Generator().manual_seed(seed)
        # a random "grammar": next token depends on the previous two
        table = torch.randint(1, VOCAB, (VOCAB, 8), generator=torch.Generator().manual_seed(5))
        self.samples = []
        for _ in range(n):
            L = rng.choice(BUCKETS)
            toks = [rng.randint(1, VOCAB - 1), rng.randint(1, VOCAB - 1)]
            choices = torch.randint(0, 8, (L,), generator=g).tolist()
            for i in range(2, L):
                toks.append(int(table[(toks[-1] + toks[-2]) % VOCAB, choices[i] % 3]))
            self.samples.append(torch.tensor(toks[:L]))

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        return self.samples[i]


class BucketSampler(Sampler):
    def __init__(self, ds, batch_size, seed=0):
        self.by_len = {}
        for i, s in enumerate(ds.samples):
            self.by_len.setdefault(len(s), []).append(i)
        self.batch_size = batch_size
        self.rng = random.Random(seed)

    def __iter__(self):
        batches = []
        for idx in self.by_len.values():
            idx = idx[:]
            self.rng.shuffle(idx)
            batches += [idx[i:i + self.batch_size] for i in range(0, len(idx), self.batch_size)]
        self.rng.shuffle(batches)
        return iter(batches)

    def __len__(self):
        return sum(math.ceil(len(v) / self.batch_size) for v in self.by_len.values())


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, attn_mask):
        y = self.ln1(x)
        x = x + self.attn(y, y, y, attn_mask=attn_mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, d=128, h=4, n_layers=3):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(64, d)
        self.blocks = nn.ModuleList(Block(d, h) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, VOCAB, bias=False)
        self.head.weight = self.tok.weight
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.pos.weight, std=0.02)
        self.mask_cache = {}
        self.pos_cache = {}

    def _causal(self, T):
        if T not in self.mask_cache:
            self.mask_cache[T] = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
            self.pos_cache[T] = torch.arange(T).unsqueeze(0)
        return self.mask_cache[T], self.pos_cache[T]

    def forward(self, idx):
        B, T = idx.shape
        mask, pos = self._causal(T)
        x = self.tok(idx) + self.pos(pos)
        for blk in self.blocks:
            x = blk(x, mask)
        return self.head(self.ln_f(x))


def train(dataloader, model, optimizer, scheduler):
    model.train()
    losses = []
    for x in dataloader:
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


@torch.no_grad()
def test(dataloader, model):
    model.eval()
    tot, n = 0.0, 0
    for x in dataloader:
        logits = model(x[:, :-1])
        tot += F.cross_entropy(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1), reduction="sum").item()
        n += x[:, 1:].numel()
    return tot / n


def main():
    train_ds, val_ds = BucketedCorpus(640, 0), BucketedCorpus(150, 1)
    train_dl = DataLoader(train_ds, batch_sampler=BucketSampler(train_ds, 16), num_workers=0)
    val_dl = DataLoader(val_ds, batch_sampler=BucketSampler(val_ds, 50), num_workers=0)
    model = GPT()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    epochs = 10
    total = epochs * len(train_dl)
    warmup = 30
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))

    t0 = time.time()
    for t in range(epochs):
        tr = train(train_dl, model, optimizer, scheduler)
        va = test(val_dl, model)
        print(f"epoch {t+1}: train {tr:.3f} val {va:.3f} (ppl {math.exp(va):.1f})  "
              f"cached lengths {sorted(model.mask_cache)}  ({time.time()-t0:.1f}s)")


if __name__ == "__main__":
    main()
