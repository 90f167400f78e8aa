# expect: leak
# holder: Paper.refs|refs|CitationWindow.papers|papers
# pattern: "trending papers" ranking over a sliding window of the newest preprints (NumPy + scipy.sparse, no torch; one step = one ingest batch of 60 papers: link their references, evict the oldest papers beyond the 4000-paper window, rebuild the window's citation matrix, personalised PageRank by power iteration, recency-weighted trending score and embedding-centroid topic neighbours, ~30 ms per step, code in main() + a CitationWindow class + a Paper class with __slots__); each Paper holds its abstract text and a 256-d float32 embedding, plus object links both ways: paper.refs (list of cited Paper objects) and paper.cited_by (set of citing Papers); CitationWindow.evict() pops the oldest paper from the OrderedDict and removes it from ref.cited_by of every paper it cites, but never removes it from the refs lists of the newer, still-live papers that cite it (and does not clear its own refs); matrix building skips refs whose pid is no longer in the window, so nothing looks wrong, but every evicted paper stays reachable from live papers' refs, and transitively every paper ever ingested, so memory grows by the whole ingest stream
# step_ms: 30
"""Trending-papers ranking over a sliding window of recent preprints.

Every batch of new papers cites older papers in the window (preferential
attachment, biased to recent work). After each batch the window is trimmed and
a recency-personalised PageRank is computed on the window's citation graph.
"""

import random
import time
from collections import OrderedDict, Counter

import numpy as np
import scipy.sparse as sp

WINDOW = 4000
BATCH = 60
N_STEPS = 520
DIM = 256
TOPICS = 24

rng = np.random.default_rng(2024)
prng = random.Random(2024)

_SYLL = ["ra", "ne", "to", "li", "ver", "gra", "pho", "tan", "sor", "mi", "qua", "den",
         "lo", "tri", "cen", "bex", "sta", "nu", "pol", "rek"]
TOPIC_WORDS = [["".join(prng.choices(_SYLL, k=prng.randint(2, 4))) for _ in range(60)]
               for _ in range(TOPICS)]
COMMON = ["we", "propose", "a", "novel", "method", "for", "the", "of", "and", "results", "show",
          "that", "our", "approach", "improves", "on", "baseline", "with", "in", "data", "model"]
TOPIC_CENTRES = rng.normal(size=(TOPICS, DIM)).astype(np.float32)


class Paper:
    __slots__ = ("pid", "title", "abstract", "topic", "day", "embedding", "refs", "cited_by")

    def __init__(self, pid, title, abstract, topic, day, embedding):
        self.pid = pid
        self.title = title
        self.abstract = abstract
        self.topic = topic
        self.day = day
        self.embedding = embedding
        self.refs = []          # Paper objects this paper cites
        self.cited_by = set()   # Paper objects citing this one


def synth_paper(pid, day):
    topic = int(rng.integers(TOPICS))
    words = TOPIC_WORDS[topic]
    title = " ".join(prng.choices(words, k=6)).title()
    abstract = " ".join(prng.choice(words) if prng.random() < 0.45 else prng.choice(COMMON)
                        for _ in range(110))
    emb = TOPIC_CENTRES[topic] + 0.6 * rng.standard_normal(DIM).astype(np.float32)
    emb /= np.linalg.norm(emb)
    return Paper(pid, title, abstract, topic, day, emb)


class CitationWindow:
    def __init__(self, window):
        self.window = window
        self.papers = OrderedDict()  # pid -> Paper, oldest first

    def __len__(self):
        return len(self.papers)

    def add(self, paper, ref_ids):
        for rid in ref_ids:
            ref = self.papers.get(rid)
            if ref is None or ref is paper:
                continue  # cites something we no longer track
            paper.refs.append(ref)
            ref.cited_by.add(paper)
        self.papers[paper.pid] = paper

    def evict(self):
        n = 0
        while len(self.papers) > self.window:
            _, old = self.papers.popitem(last=False)
            # the papers it cited lose one citation
            for ref in old.refs:
                ref.cited_by.discard(old)
            n += 1
        return n

    def ref_sampler(self):
        """Preferential attachment with a recency bias, frozen for one batch
        (papers of the same batch do not cite each other)."""
        pids = list(self.papers.keys())
        if not pids:
            return lambda k: []
        cites = np.fromiter((len(p.cited_by) for p in self.papers.values()), dtype=np.float64,
                            count=len(pids))
        age = np.arange(len(pids), 0, -1, dtype=np.float64)
        w = (1.0 + cites) * np.exp(-age / 2500.0)
        cdf = np.cumsum(w)
        cdf /= cdf[-1]

        def sample(k):
            pick = np.unique(np.searchsorted(cdf, rng.random(k)))
            return [pids[i] for i in pick]
        return sample

    def matrix(self):
        index = {pid: i for i, pid in enumerate(self.papers)}
        rows, cols = [], []
        for i, p in enumerate(self.papers.values()):
            for r in p.refs:
                j = index.get(r.pid)
                if j is not None:  # refs that fell out of the window are ignored
                    rows.append(i)
                    cols.append(j)
        n = len(index)
        a = sp.csr_matrix((np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=(n, n))
        return a, index


def pagerank(a, personalise, alpha=0.85, iters=30):
    n = a.shape[0]
    out = np.asarray(a.sum(axis=1)).ravel()
    inv = np.divide(1.0, out, out=np.zeros_like(out), where=out > 0)
    at = (sp.diags(inv) @ a).T.tocsr()
    v = personalise / personalise.sum()
    x = np.full(n, 1.0 / n)
    for _ in range(iters):
        dangling = x[out == 0].sum()
        x = alpha * (at @ x + dangling * v) + (1 - alpha) * v
    return x


def main():
    win = CitationWindow(WINDOW)
    pid = 0
    t0 = last = time.perf_counter()
    evicted = 0
    for step in range(N_STEPS):
        day = step // 20
        sample_refs = win.ref_sampler()
        for _ in range(BATCH):
            paper = synth_paper(pid, day)
            win.add(paper, sample_refs(prng.randint(5, 12)))
            pid += 1
        evicted += win.evict()

        a, index = win.matrix()
        papers = list(win.papers.values())
        ages = np.array([day - p.day for p in papers], dtype=np.float64)
        pr = pagerank(a, np.exp(-ages / 3.0))
        top = np.argsort(pr)[-50:][::-1]
        emb = np.stack([papers[i].embedding for i in top])
        centroid = emb.mean(axis=0)
        all_emb = np.stack([p.embedding for p in papers[-2000:]])
        near = np.argsort(all_emb @ centroid)[-10:]
        kw = Counter(w for i in top[:10] for w in papers[i].abstract.split() if len(w) > 5)

        now = time.perf_counter()
        if now - last >= 1.0:
            last = now
            best = papers[top[0]]
            print(f"step {step:4d} window={len(win)} edges={a.nnz} evicted={evicted} "
                  f"top='{best.title[:28]}' near={len(near)} kw={kw.most_common(1)[0][0]}",
                  flush=True)
    print(f"done: {pid} papers ingested in {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
