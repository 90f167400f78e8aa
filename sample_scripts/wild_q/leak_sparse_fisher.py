# expect: leak
# holder: self.fisher|tracker.fisher|fisher
# pattern: fastText-style phishing-URL classifier (hashed char n-gram nn.EmbeddingBag with sparse=True + linear head) trained with a hand-written SGD update (no torch.optim); every --fisher-every steps FisherTracker.update() accumulates the empirical Fisher of the embedding table as self.fisher = self.fisher + g * g on the raw sparse gradient, which is an uncoalesced COO tensor (one row entry per n-gram occurrence); sparse addition of uncoalesced operands just concatenates indices and values, so self.fisher's nnz grows by ~4k rows (x16 floats) per update for the whole run instead of staying bounded by the table size
# step_ms: 4
"""Hashed character n-gram URL classifier with Fisher-based bucket pruning.

fastText-style model: every URL is turned into character 3- and 4-grams,
hashed into --buckets rows of an EmbeddingBag (mean pooling) and classified
by a linear layer.  The embedding table uses sparse gradients and a plain
SGD update (with a dense momentum update for the head).  During training we
also accumulate the diagonal empirical Fisher of the table, which is used
at the end to drop the least informative hash buckets (the "vocabulary
pruning" step before shipping the model to the browser extension).
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

BRANDS = ["paypal", "apple", "microsoft", "amazon", "netflix", "chase", "wellsfargo", "dhl", "office365", "steam"]
BENIGN_DOMAINS = ["github.com", "wikipedia.org", "python.org", "bbc.co.uk", "nytimes.com", "stackoverflow.com",
                  "arxiv.org", "reddit.com", "youtube.com", "mozilla.org", "apple.com", "amazon.com"]
BAIT = ["login", "verify", "secure", "account", "update", "confirm", "signin", "billing", "unlock", "support"]
TLDS = ["com", "net", "xyz", "top", "info", "ru", "cn", "io", "co", "online", "site"]
WORDS = ["news", "docs", "blog", "wiki", "help", "shop", "search", "watch", "article", "issues", "pull",
         "questions", "tags", "users", "en", "static", "assets", "api", "v2", "releases"]


class UrlFactory:
    def __init__(self, seed, label_noise=0.03):
        self.rng = np.random.default_rng(seed)
        self.label_noise = label_noise

    def _tok(self, n):
        return "".join(self.rng.choice(list("abcdefghijklmnopqrstuvwxyz0123456789"), size=n))

    def benign(self):
        r = self.rng
        dom = r.choice(BENIGN_DOMAINS)
        path = "/".join(r.choice(WORDS, size=r.integers(1, 4)))
        if r.random() < 0.25:
            path = f"{r.choice(BAIT)}/{path}"
        if r.random() < 0.4:
            path += f"/{r.integers(1, 10**6)}"
        q = f"?q={self._tok(r.integers(3, 9))}" if r.random() < 0.3 else ""
        return f"https://{'www.' if r.random() < 0.5 else ''}{dom}/{path}{q}"

    def phish(self):
        r = self.rng
        brand = r.choice(BRANDS)
        bait = r.choice(BAIT)
        style = r.integers(0, 3)
        if style == 0:
            host = f"{brand}-{bait}-{self._tok(4)}.{r.choice(TLDS)}"
        elif style == 1:
            host = f"{bait}.{brand}.{self._tok(6)}.{r.choice(TLDS)}"
        else:
            host = f"{r.integers(11, 223)}.{r.integers(0, 255)}.{r.integers(0, 255)}.{r.integers(1, 254)}"
        if r.random() < 0.3:
            path = "/" + "/".join(r.choice(WORDS, size=r.integers(1, 3)))
        else:
            path = f"/{bait}/{brand}/{self._tok(r.integers(6, 14))}.php"
        q = f"?session={self._tok(16)}&id={r.integers(10**5, 10**7)}" if r.random() < 0.6 else ""
        return f"http{'s' if r.random() < 0.5 else ''}://{host}{path}{q}"

    def batch(self, n, p_phish=0.4):
        labels = (self.rng.random(n) < p_phish).astype(np.int64)
        urls = [self.phish() if y else self.benign() for y in labels]
        flip = self.rng.random(n) < self.label_noise
        return urls, np.where(flip, 1 - labels, labels)


def char_ngrams(url, buckets, ns=(3, 4)):
    s = f"<{url.lower()}>"
    out = []
    for n in ns:
        for i in range(len(s) - n + 1):
            out.append(zlib.crc32(s[i:i + n].encode()) % buckets)
    return out


def encode(urls, buckets):
    ids, offsets = [], []
    for u in urls:
        offsets.append(len(ids))
        ids.extend(char_ngrams(u, buckets))
    return torch.tensor(ids, dtype=torch.long), torch.tensor(offsets, dtype=torch.long)


class UrlClassifier(nn.Module):
    def __init__(self, buckets, dim):
        super().__init__()
        self.emb = nn.EmbeddingBag(buckets, dim, mode="mean", sparse=True)
        nn.init.normal_(self.emb.weight, std=0.05)
        self.head = nn.Linear(dim, 2)

    def forward(self, ids, offsets):
        return self.head(self.emb(ids, offsets))


class FisherTracker:
    """Running diagonal empirical Fisher of the (sparse) embedding table."""

    def __init__(self, table):
        self.shape = tuple(table.shape)
        self.fisher = torch.sparse_coo_tensor(torch.empty(2, 0, dtype=torch.long),
                                              torch.empty(0), self.shape)
        self.updates = 0

    def update(self, grad):
        g = grad.to_sparse() if not grad.is_sparse else grad
        self.fisher = self.fisher + g * g
        self.updates += 1

    def bucket_scores(self):
        f = self.fisher.coalesce()
        scores = torch.zeros(self.shape[0])
        scores.index_add_(0, f.indices()[0], f.values().sum(dim=1))
        return scores / max(self.updates, 1)


def sgd_step(model, lr, momentum, bufs):
    with torch.no_grad():
        g = model.emb.weight.grad
        model.emb.weight.add_(g, alpha=-lr)
        for name, p in model.head.named_parameters():
            b = bufs.setdefault(name, torch.zeros_like(p))
            b.mul_(momentum).add_(p.grad)
            p.add_(b, alpha=-lr)
    model.zero_grad(set_to_none=True)


@torch.no_grad()
def evaluate(model, urls, labels, buckets, keep=None):
    ids, offs = encode(urls, buckets)
    w = model.emb.weight
    if keep is not None:
        w = w * keep[:, None]
    logits = model.head(F.embedding_bag(ids, w, offs, mode="mean"))
    return (logits.argmax(1).numpy() == labels).mean()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=3600)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--buckets", type=int, default=1 << 18)
    p.add_argument("--dim", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--fisher-every", type=int, default=10)
    p.add_argument("--prune-frac", type=float, default=0.5)
    p.add_argument("--log-every", type=int, default=400)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    factory = UrlFactory(args.seed)
    val_urls, val_labels = UrlFactory(args.seed + 1).batch(2000)

    model = UrlClassifier(args.buckets, args.dim)
    tracker = FisherTracker(model.emb.weight)
    bufs = {}
    t0 = time.perf_counter()
    run_loss, run_acc = 0.0, 0.0
    for step in range(1, args.steps + 1):
        urls, labels = factory.batch(args.batch_size)
        ids, offs = encode(urls, args.buckets)
        y = torch.from_numpy(labels)
        logits = model(ids, offs)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        if step % args.fisher_every == 0:
            tracker.update(model.emb.weight.grad)
        lr = args.lr * (1.0 - 0.9 * step / args.steps)
        sgd_step(model, lr, args.momentum, bufs)

        run_loss += loss.item()
        run_acc += (logits.argmax(1) == y).float().mean().item()
        if step % args.log_every == 0:
            val_acc = evaluate(model, val_urls, val_labels, args.buckets)
            ms = (time.perf_counter() - t0) * 1000 / step
            print(f"step {step:5d}  loss {run_loss / args.log_every:.4f}  train_acc {run_acc / args.log_every:.3f}  "
                  f"val_acc {val_acc:.3f}  {ms:.1f} ms/step", flush=True)
            run_loss, run_acc = 0.0, 0.0

    scores = tracker.bucket_scores()
    used = scores > 0
    thresh = torch.quantile(scores[used], args.prune_frac)
    keep = (scores > thresh).float()
    print(f"buckets touched: {int(used.sum())} / {args.buckets}; keeping {int(keep.sum())}")
    print(f"val acc full {evaluate(model, val_urls, val_labels, args.buckets):.3f}  "
          f"pruned {evaluate(model, val_urls, val_labels, args.buckets, keep):.3f}")


if __name__ == "__main__":
    main()
