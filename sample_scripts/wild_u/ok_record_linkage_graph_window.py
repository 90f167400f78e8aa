# expect: no_leak
# holder:
# pattern: streaming record linkage / entity resolution over noisy person records (name + city + birth year with typos; no optimizer: a frozen hashed char-trigram nn.EmbeddingBag encoder run under torch.inference_mode, ~7 ms per batch of 64 records, code in main() + LinkageGraph/Encoder/PairCounter classes); every record becomes a node of a networkx.Graph with its text, embedding and ground-truth entity as attributes and is linked to recent records whose cosine similarity passes a threshold; clusters are connected components; it looks like a graph (and a trigram memo) that only grows, but LinkageGraph.expire() calls G.remove_nodes_from() on every node older than `window` batches (removing their edges and attribute dicts too) and drops them from the embedding matrix index, and trigrams() is an lru_cache(maxsize=4096), so node/edge counts and memory plateau after the first `window` (300) batches (~10% of the run)
# step_ms: 7
"""Streaming entity resolution with a sliding similarity graph.

Person records (name, city, birth year) are emitted by a synthetic
population with realistic corruption: character typos, dropped or swapped
name parts, nicknames and abbreviated cities. Records are embedded with a
hashed character-trigram EmbeddingBag, linked to recent records above a
cosine threshold, and resolved by connected components. Precision and
recall of the predicted "same entity" pairs are tracked online.

Main options (defaults):
    --batches 2600 --window 300
"""
import argparse
import collections
import functools
import os
import time
import zlib
from dataclasses import dataclass

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import networkx as nx
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

FIRST = ["anna", "ben", "carla", "david", "elena", "felix", "greta", "hugo", "irene", "jonas", "klara",
         "lukas", "maria", "niklas", "olga", "paul", "quentin", "rosa", "stefan", "tanja", "ulrich",
         "vera", "walter", "xenia", "yusuf", "zoe", "alexander", "katharina", "sebastian", "johanna"]
LAST = ["mueller", "schmidt", "schneider", "fischer", "weber", "meyer", "wagner", "becker", "schulz",
        "hoffmann", "koch", "richter", "klein", "wolf", "neumann", "schwarz", "zimmermann", "braun",
        "krueger", "hartmann", "lange", "werner", "krause", "lehmann", "koehler", "maier", "jung"]
CITIES = ["berlin", "hamburg", "muenchen", "koeln", "frankfurt am main", "stuttgart", "duesseldorf",
          "leipzig", "dortmund", "essen", "bremen", "dresden", "hannover", "nuernberg", "freiburg"]
NICK = {"alexander": "alex", "katharina": "kathi", "sebastian": "basti", "johanna": "jo", "niklas": "nik"}


@dataclass
class Config:
    batch: int = 64
    window: int = 300
    dim: int = 64
    buckets: int = 2 ** 16
    threshold: float = 0.86
    n_entities: int = 40000


class Population:
    def __init__(self, rng, n):
        self.rng = rng
        self.people = [(rng.choice(FIRST), rng.choice(LAST), rng.choice(CITIES), int(rng.integers(1940, 2005)))
                       for _ in range(n)]
        # entities become active in a slowly moving block, so duplicates arrive close in time
        self.center = 0.0

    def _typo(self, s):
        rng = self.rng
        if len(s) < 3 or rng.random() > 0.35:
            return s
        i = rng.integers(1, len(s) - 1)
        op = rng.integers(3)
        if op == 0:
            return s[:i] + s[i + 1:]
        if op == 1:
            return s[:i] + s[i + 1] + s[i] + s[i + 2:]
        return s[:i] + "aeiou"[rng.integers(5)] + s[i + 1:]

    def records(self, k):
        rng = self.rng
        self.center = (self.center + 7.5) % len(self.people)
        ids = (self.center + rng.normal(0, 150, k)).astype(int) % len(self.people)
        out = []
        for e in ids:
            first, last, city, year = self.people[e]
            if first in NICK and rng.random() < 0.3:
                first = NICK[first]
            first, last = self._typo(first), self._typo(last)
            if rng.random() < 0.2:
                city = city.split()[0][:4] + "."
            name = f"{last}, {first}" if rng.random() < 0.3 else f"{first} {last}"
            yr = year + (rng.integers(-1, 2) if rng.random() < 0.05 else 0)
            out.append((f"{name} | {city} | {yr}", int(e)))
        return out


@functools.lru_cache(maxsize=4096)
def trigrams(token):
    t = f"#{token}#"
    return tuple(zlib.crc32(t[i:i + 3].encode()) for i in range(len(t) - 2))


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.buckets = cfg.buckets
        self.emb = nn.EmbeddingBag(cfg.buckets, cfg.dim, mode="mean")
        nn.init.normal_(self.emb.weight, 0, 1)

    def forward(self, texts):
        idx, offsets = [], []
        for t in texts:
            offsets.append(len(idx))
            for tok in t.replace(",", " ").replace("|", " ").split():
                idx.extend(h % self.buckets for h in trigrams(tok))
        v = self.emb(torch.tensor(idx), torch.tensor(offsets))
        return F.normalize(v, dim=1)


class LinkageGraph:
    def __init__(self, cfg):
        self.cfg = cfg
        self.G = nx.Graph()
        self.by_batch = collections.deque()      # (batch id, [node ids])
        self.next_id = 0
        self.ids = np.zeros(0, np.int64)
        self.embs = np.zeros((0, cfg.dim), np.float32)
        self.members = collections.defaultdict(set)   # entity -> nodes in the window (evaluation only)

    def add(self, batch_id, texts, embs, entities):
        nodes = list(range(self.next_id, self.next_id + len(texts)))
        self.next_id += len(texts)
        for n, t, e, ent in zip(nodes, texts, embs, entities):
            self.G.add_node(n, text=t, emb=e, entity=ent, batch=batch_id)
            self.members[ent].add(n)
        pool_ids = np.concatenate([self.ids, nodes])
        pool = np.concatenate([self.embs, embs])
        sims = embs @ pool.T
        new_edges = []
        for i, n in enumerate(nodes):
            for j in np.flatnonzero(sims[i] > self.cfg.threshold):
                m = int(pool_ids[j])
                if m != n:
                    new_edges.append((n, m, float(sims[i, j])))
        self.G.add_weighted_edges_from(new_edges, weight="sim")
        self.ids, self.embs = pool_ids, pool
        self.by_batch.append((batch_id, nodes))
        return nodes

    def expire(self, batch_id):
        gone = []
        while self.by_batch and self.by_batch[0][0] <= batch_id - self.cfg.window:
            gone.extend(self.by_batch.popleft()[1])
        if gone:
            for n in gone:
                ent = self.G.nodes[n]["entity"]
                self.members[ent].discard(n)
                if not self.members[ent]:
                    del self.members[ent]
            self.G.remove_nodes_from(gone)
            keep = self.ids > gone[-1]
            self.ids, self.embs = self.ids[keep], self.embs[keep]
        return len(gone)

    def cluster_of(self, n):
        return nx.node_connected_component(self.G, n)


class PairCounter:
    """Online pairwise precision / recall for the links of each new record."""

    def __init__(self):
        self.tp = self.fp = self.fn = 0

    def update(self, G, nodes, members):
        for n in nodes:
            ent = G.nodes[n]["entity"]
            pred = set(G.neighbors(n))
            truth = members[ent] - {n}
            tp = sum(G.nodes[m]["entity"] == ent for m in pred)
            self.tp += tp
            self.fp += len(pred) - tp
            self.fn += len(truth - pred)

    def prf(self):
        p = self.tp / max(self.tp + self.fp, 1)
        r = self.tp / max(self.tp + self.fn, 1)
        return p, r, 2 * p * r / max(p + r, 1e-9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=2600)
    ap.add_argument("--window", type=int, default=300)
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--log-every", type=int, default=325)
    args = ap.parse_args()

    cfg = Config(window=args.window)
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    pop = Population(rng, cfg.n_entities)
    enc = Encoder(cfg).eval()
    graph = LinkageGraph(cfg)
    pairs = PairCounter()

    t0 = time.time()
    for b in range(1, args.batches + 1):
        recs = pop.records(cfg.batch)
        texts = [r[0] for r in recs]
        ents = [r[1] for r in recs]
        with torch.inference_mode():
            embs = enc(texts).numpy()
        nodes = graph.add(b, texts, embs, ents)
        pairs.update(graph.G, nodes, graph.members)
        graph.expire(b)

        if b % args.log_every == 0:
            sizes = [len(c) for c in nx.connected_components(graph.G)]
            p, r, f1 = pairs.prf()
            print(f"batch {b:5d}  nodes {graph.G.number_of_nodes():5d}  edges {graph.G.number_of_edges():6d}  "
                  f"clusters {len(sizes):5d} (max {max(sizes)})  P {p:.3f} R {r:.3f} F1 {f1:.3f}  "
                  f"{(time.time() - t0) / b * 1e3:.1f} ms/batch", flush=True)

    print(f"done; pairwise F1 {pairs.prf()[2]:.3f}, trigram cache {trigrams.cache_info()}")


if __name__ == "__main__":
    main()
