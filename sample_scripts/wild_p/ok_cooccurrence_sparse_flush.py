# expect: no_leak
# pattern: GloVe-style co-occurrence counting that appends each batch's (row, col, weight) triplets to pending lists and every --flush-every batches folds them into the running scipy.sparse CSR total (coo -> csr sums duplicates) and empties the lists; the pending triplets make a tall sawtooth, and the CSR total's nnz is capped by the finite set of word pairs the corpus can produce, so its growth flattens early (NumPy/SciPy only, no torch)
# step_ms: 20
"""Count-based word vectors (PPMI + truncated SVD) for a synthetic corpus.

The corpus comes from a sparse class-based Markov "grammar": word types
belong to a few hundred classes and each class has a handful of plausible
successor classes.  We stream batches of sentences, count distance-
weighted co-occurrences in a symmetric window (GloVe's 1/d weighting),
periodically consolidate the counts into a sparse matrix, and at the end
turn the matrix into PPMI and factorise it with a sparse SVD.  As a sanity
check, words of the same class should end up as nearest neighbours.
"""
import argparse
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import svds


def make_grammar(rng, vocab, n_classes, fanout):
    """Class-based bigram grammar: the next word's class depends on the current word's class."""
    word_class = rng.permutation(np.arange(vocab) % n_classes)
    members = [np.nonzero(word_class == c)[0] for c in range(n_classes)]
    size = min(len(m) for m in members)
    members = np.stack([m[:size] for m in members])
    succ = np.stack([rng.choice(n_classes, size=fanout, replace=False) for _ in range(n_classes)])
    probs = rng.dirichlet(np.full(fanout, 2.0), size=n_classes)
    return word_class, members, succ, np.cumsum(probs, axis=1)


def sentences(rng, grammar, n_sent, length):
    word_class, members, succ, cum = grammar
    while True:
        out = np.empty((n_sent, length), dtype=np.int32)
        cls = rng.integers(0, len(succ), n_sent)
        out[:, 0] = members[cls, rng.integers(0, members.shape[1], n_sent)]
        for t in range(1, length):
            k = (cum[cls] < rng.random(n_sent)[:, None]).sum(axis=1)
            cls = succ[cls, np.minimum(k, succ.shape[1] - 1)]
            out[:, t] = members[cls, rng.integers(0, members.shape[1], n_sent)]
        yield out


class CooccurrenceCounter:
    def __init__(self, vocab, window):
        self.vocab = vocab
        self.window = window
        self.total = sp.csr_matrix((vocab, vocab), dtype=np.float64)
        self._rows, self._cols, self._vals = [], [], []
        self.tokens = 0
        self.flushes = 0

    def add(self, batch):
        self.tokens += batch.size
        for d in range(1, self.window + 1):
            left = batch[:, :-d].ravel()
            right = batch[:, d:].ravel()
            w = np.full(left.size, 1.0 / d, dtype=np.float32)
            self._rows += [left, right]
            self._cols += [right, left]
            self._vals += [w, w]

    def pending(self):
        return sum(a.size for a in self._rows)

    def flush(self):
        if not self._rows:
            return
        coo = sp.coo_matrix(
            (np.concatenate(self._vals), (np.concatenate(self._rows), np.concatenate(self._cols))),
            shape=(self.vocab, self.vocab),
        )
        self.total = self.total + coo.tocsr()
        self._rows, self._cols, self._vals = [], [], []
        self.flushes += 1


def ppmi(counts):
    counts = counts.tocoo()
    total = counts.sum()
    row = np.asarray(counts.sum(axis=1)).ravel()
    col = np.asarray(counts.sum(axis=0)).ravel() ** 0.75
    col = col / col.sum() * total
    pmi = np.log(counts.data * total / (row[counts.row] * col[counts.col]))
    keep = pmi > 0
    return sp.csr_matrix((pmi[keep], (counts.row[keep], counts.col[keep])), shape=counts.shape)


def main():
    ap = argparse.ArgumentParser(description="co-occurrence counting + PPMI-SVD word vectors")
    ap.add_argument("--vocab", type=int, default=2000)
    ap.add_argument("--classes", type=int, default=200)
    ap.add_argument("--fanout", type=int, default=6)
    ap.add_argument("--window", type=int, default=2)
    ap.add_argument("--sentences", type=int, default=2048)
    ap.add_argument("--length", type=int, default=48)
    ap.add_argument("--batches", type=int, default=1150)
    ap.add_argument("--flush-every", type=int, default=8)
    ap.add_argument("--dim", type=int, default=48)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    grammar = make_grammar(rng, args.vocab, args.classes, args.fanout)
    counter = CooccurrenceCounter(args.vocab, args.window)
    stream = sentences(rng, grammar, args.sentences, args.length)

    t0 = time.perf_counter()
    for b in range(1, args.batches + 1):
        counter.add(next(stream))
        if b % args.flush_every == 0:
            counter.flush()
        if b % 200 == 0:
            print(
                f"batch {b:5d}  tokens {counter.tokens / 1e6:6.1f}M  nnz {counter.total.nnz:8d}  "
                f"pending {counter.pending():8d}  {1000 * (time.perf_counter() - t0) / b:.1f} ms/batch",
                flush=True,
            )
    counter.flush()

    m = ppmi(counter.total)
    u, s, _ = svds(m, k=args.dim)
    vecs = u * np.sqrt(s)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-9

    # words of the same grammatical class should be nearest neighbours
    word_class = grammar[0]
    probe = rng.choice(args.vocab, 300, replace=False)
    sims = vecs[probe] @ vecs.T
    sims[np.arange(len(probe)), probe] = -np.inf
    nn = sims.argmax(axis=1)
    hit = np.mean(word_class[nn] == word_class[probe])
    print(
        f"done: {counter.flushes} flushes, nnz {counter.total.nnz}, PPMI nnz {m.nnz}, "
        f"nearest neighbour in same class {hit:.1%} (chance {1 / args.classes:.1%})"
    )


if __name__ == "__main__":
    main()
