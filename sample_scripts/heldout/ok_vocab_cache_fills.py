# expect: no_leak
# pattern: lru_cache(maxsize=None) over a finite vocabulary: fills early, then only hits
# step_ms: 5
"""Bag-of-subwords text classifier (fastText-style) with cached tokenisation.

``subword_ids(word)`` is expensive-ish (character n-grams, hashing) so it is
wrapped in ``functools.lru_cache(maxsize=None)``. That looks unbounded, but
the vocabulary is finite (4,000 words): the cache fills during the first few
hundred steps and then every call is a hit. Memory rises, then stays flat.
"""

import argparse
import functools
import random
import time
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

N_BUCKETS = 20_000


@functools.lru_cache(maxsize=None)  # noqa: UP033
def subword_ids(word):
    w = f"<{word}>"
    grams = [w[i : i + n] for n in (3, 4, 5) for i in range(len(w) - n + 1)]
    return torch.tensor(
        [zlib.crc32(g.encode()) % N_BUCKETS for g in grams] + [hash(word) % N_BUCKETS]
    )


def make_vocab(rng, n):
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    vocab = set()
    while len(vocab) < n:
        vocab.add(
            "".join(rng.choice(letters[: rng.randint(6, 26)]) for _ in range(rng.randint(3, 11)))
        )
    return sorted(vocab)


class FastText(nn.Module):
    def __init__(self, dim, n_classes):
        super().__init__()
        self.emb = nn.EmbeddingBag(N_BUCKETS, dim, mode="mean")
        self.fc = nn.Linear(dim, n_classes)

    def forward(self, flat_ids, offsets):
        return self.fc(self.emb(flat_ids, offsets))


def encode(docs):
    ids, offsets, pos = [], [], 0
    for doc in docs:
        offsets.append(pos)
        parts = [subword_ids(w) for w in doc]
        ids.extend(parts)
        pos += sum(len(p) for p in parts)
    return torch.cat(ids), torch.tensor(offsets)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3600)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=4000)
    args = ap.parse_args()
    rng = random.Random(0)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    vocab = make_vocab(rng, args.vocab)
    topic_words = [vocab[i::4] for i in range(4)]
    model = FastText(64, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    t0 = time.time()
    for step in range(args.steps):
        labels = [rng.randrange(4) for _ in range(args.batch)]
        docs = [
            [
                rng.choice(topic_words[lab]) if rng.random() < 0.4 else rng.choice(vocab)
                for _ in range(12)
            ]
            for lab in labels
        ]
        flat, offs = encode(docs)
        loss = F.cross_entropy(model(flat, offs), torch.tensor(labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 500 == 0:
            info = subword_ids.cache_info()
            print(
                f"step {step:5d} loss {loss.item():.3f} cache {info.currsize}/{args.vocab} "
                f"hit-rate {info.hits / max(1, info.hits + info.misses):.2f} "
                f"({time.time() - t0:.1f}s)"
            )


if __name__ == "__main__":
    main()
