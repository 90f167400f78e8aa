# expect: no_leak
# pattern: product-title categoriser with two hashed nn.EmbeddingBag tables (word uni/bi-grams and char trigrams, sparse=True) trained with a hand-written sparse Adagrad (no torch.optim) whose squared-gradient state is itself a sparse COO tensor "so untouched hash rows cost nothing"; each step the raw (uncoalesced) gradient is coalesced first, so state = state + g * g adds two coalesced tensors and torch merges them into a coalesced union: the state's nnz grows with the number of distinct hash rows touched so far (fast at first, then the coupon-collector tail), and stops at the table size, so memory climbs for roughly the first 40% of the run and then stays flat (each step's new state replaces the old one)
# step_ms: 17
"""Hashed-feature product categoriser with a sparse-state Adagrad.

Marketplace titles ("Acme ProMax 2000 wireless noise cancelling headphones
black 32GB") are mapped to one of ~40 categories.  Features are hashed word
unigrams + bigrams and character trigrams, each pooled by its own
EmbeddingBag; the concatenation goes through a small MLP.  The embedding
tables get sparse gradients and are updated by a hand-written Adagrad that
keeps its accumulator as a sparse tensor, since most hash rows of a fresh
table are never touched in a short fine-tuning run.  The dense MLP is
updated with plain Adagrad on dense tensors.
"""
import argparse
import time
import warnings
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore", message="Sparse invariant checks")

N_CAT = 40
SUFFIXES = ["pro", "max", "mini", "plus", "ultra", "lite", "air", "neo", "x", "s"]
COLOURS = ["black", "white", "silver", "blue", "red", "green", "grey", "rose", "gold"]


class TitleFactory:
    def __init__(self, seed, vocab_per_cat=120, shared=400):
        rng = np.random.default_rng(seed)
        letters = list("abcdefghijklmnopqrstuvwxyz")

        def word(lo, hi):
            return "".join(rng.choice(letters, size=rng.integers(lo, hi)))

        self.cat_words = [[word(4, 10) for _ in range(vocab_per_cat)] for _ in range(N_CAT)]
        self.shared = [word(3, 8) for _ in range(shared)]
        self.brands = [word(4, 8).capitalize() for _ in range(300)]
        zipf = 1.0 / np.arange(1, vocab_per_cat + 1) ** 1.1
        self.p_cat = zipf / zipf.sum()
        zs = 1.0 / np.arange(1, shared + 1)
        self.p_shared = zs / zs.sum()
        self.rng = np.random.default_rng(seed + 1)

    def title(self, c):
        r = self.rng
        words = [r.choice(self.brands)]
        words += list(r.choice(self.cat_words[c], size=r.integers(2, 5), p=self.p_cat))
        words += list(r.choice(self.shared, size=r.integers(1, 4), p=self.p_shared))
        if r.random() < 0.6:
            words.append(f"{r.choice(SUFFIXES)}{r.integers(1, 3000)}")
        if r.random() < 0.5:
            words.append(r.choice(COLOURS))
        if r.random() < 0.3:
            words.append(f"{2 ** r.integers(3, 9)}gb")
        r.shuffle(words[1:])
        return " ".join(words).lower()

    def batch(self, n):
        cats = self.rng.integers(0, N_CAT, n)
        return [self.title(c) for c in cats], cats


def h(s, buckets):
    return zlib.crc32(s.encode()) % buckets


def featurise(titles, word_buckets, char_buckets):
    w_ids, w_off, c_ids, c_off = [], [], [], []
    for t in titles:
        toks = t.split()
        w_off.append(len(w_ids))
        w_ids += [h(w, word_buckets) for w in toks]
        w_ids += [h(a + "_" + b, word_buckets) for a, b in zip(toks, toks[1:])]
        c_off.append(len(c_ids))
        s = f" {t} "
        c_ids += [h(s[i:i + 3], char_buckets) for i in range(len(s) - 2)]
    T = lambda v: torch.tensor(v, dtype=torch.long)
    return T(w_ids), T(w_off), T(c_ids), T(c_off)


class TitleNet(nn.Module):
    def __init__(self, word_buckets, char_buckets, dim):
        super().__init__()
        self.words = nn.EmbeddingBag(word_buckets, dim, mode="mean", sparse=True)
        self.chars = nn.EmbeddingBag(char_buckets, dim, mode="mean", sparse=True)
        for e in (self.words, self.chars):
            nn.init.normal_(e.weight, std=0.1)
        self.mlp = nn.Sequential(nn.Linear(2 * dim, 128), nn.ReLU(), nn.Linear(128, N_CAT))

    def forward(self, w_ids, w_off, c_ids, c_off):
        return self.mlp(torch.cat([self.words(w_ids, w_off), self.chars(c_ids, c_off)], dim=1))


class SparseAdagrad:
    def __init__(self, model, lr=0.05, eps=1e-8):
        self.model = model
        self.lr = lr
        self.eps = eps
        self.sparse_params = [model.words.weight, model.chars.weight]
        self.dense_params = list(model.mlp.parameters())
        self.state = {id(p): torch.sparse_coo_tensor(torch.empty(1, 0, dtype=torch.long),
                                                     torch.empty(0, p.shape[1]), p.shape)
                      for p in self.sparse_params}
        self.dense_state = {id(p): torch.zeros_like(p) for p in self.dense_params}

    @torch.no_grad()
    def step(self):
        for p in self.sparse_params:
            g = p.grad.coalesce()
            acc = self.state[id(p)] + g * g
            self.state[id(p)] = acc
            std = acc.sparse_mask(g).values().sqrt_().add_(self.eps)
            p.index_add_(0, g.indices()[0], g.values() / std, alpha=-self.lr)
        for p in self.dense_params:
            s = self.dense_state[id(p)]
            s.addcmul_(p.grad, p.grad)
            p.addcdiv_(p.grad, s.sqrt().add_(self.eps), value=-self.lr)
        self.model.zero_grad(set_to_none=True)

    def state_rows(self):
        return [self.state[id(p)]._nnz() for p in self.sparse_params]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=1100)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--word-buckets", type=int, default=1 << 16)
    p.add_argument("--char-buckets", type=int, default=1 << 15)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--log-every", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    data = TitleFactory(args.seed)
    val_titles, val_y = data.batch(1000)
    val_x = featurise(val_titles, args.word_buckets, args.char_buckets)
    model = TitleNet(args.word_buckets, args.char_buckets, args.dim)
    opt = SparseAdagrad(model, lr=args.lr)

    t0 = time.perf_counter()
    run = []
    for step in range(1, args.steps + 1):
        titles, y = data.batch(args.batch_size)
        x = featurise(titles, args.word_buckets, args.char_buckets)
        loss = F.cross_entropy(model(*x), torch.from_numpy(y))
        loss.backward()
        opt.step()
        run.append(loss.item())
        if step % args.log_every == 0:
            with torch.no_grad():
                acc = (model(*val_x).argmax(1).numpy() == val_y).mean()
            rows = opt.state_rows()
            ms = (time.perf_counter() - t0) * 1000 / step
            print(f"step {step:5d}  loss {np.mean(run):.3f}  val_acc {acc:.3f}  "
                  f"adagrad rows word={rows[0]} char={rows[1]}  {ms:.1f} ms/step", flush=True)
            run = []


if __name__ == "__main__":
    main()
