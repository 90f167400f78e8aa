# expect: leak
# holder: gc.garbage|garbage
# pattern: gc.set_debug(gc.DEBUG_SAVEALL) left on from a debugging session; every step's sampled subgraph (Node<->Edge reference cycles carrying numpy features) becomes cyclic garbage, and SAVEALL makes the collector append it to gc.garbage instead of freeing it
# step_ms: 18
"""Mini-batch GraphSAGE-style node classification on a synthetic stochastic block model.

Subgraphs are sampled around random seed nodes; the sampler builds a small
object graph (Node / Edge with back-references) that is then flattened into
tensors for a two-layer mean-aggregation GNN.
"""
import gc
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


class Node:
    __slots__ = ("nid", "feat", "label", "edges", "hop", "__weakref__")

    def __init__(self, nid, feat, label, hop):
        self.nid = nid
        self.feat = feat
        self.label = label
        self.edges = []
        self.hop = hop


class Edge:
    __slots__ = ("src", "dst", "weight")

    def __init__(self, src, dst, weight):
        self.src = src
        self.dst = dst
        self.weight = weight
        src.edges.append(self)
        dst.edges.append(self)


def make_sbm(n_nodes, n_blocks, feat_dim, rng):
    labels = rng.integers(0, n_blocks, size=n_nodes)
    centers = rng.normal(0, 0.4, size=(n_blocks, feat_dim)).astype(np.float32)
    feats = centers[labels] + rng.normal(0, 3.0, size=(n_nodes, feat_dim)).astype(np.float32)
    members = [np.flatnonzero(labels == b) for b in range(n_blocks)]
    adj = []
    for i in range(n_nodes):
        same = members[labels[i]]
        k_in = rng.integers(4, 10)
        k_out = rng.integers(1, 4)
        nb = np.concatenate([rng.choice(same, k_in), rng.integers(0, n_nodes, k_out)])
        adj.append(np.unique(nb[nb != i]))
    return feats, labels, adj


class SubgraphSampler:
    def __init__(self, feats, labels, adj, fanout=(8, 5), seed=0):
        self.feats, self.labels, self.adj = feats, labels, adj
        self.fanout = fanout
        self.rng = np.random.default_rng(seed)

    def sample(self, seeds):
        nodes = {}
        frontier = []
        for s in seeds:
            # each node gets its own (augmented) copy of the features
            feat = self.feats[s] + self.rng.normal(0, 0.1, self.feats.shape[1]).astype(np.float32)
            nodes[s] = Node(int(s), feat, int(self.labels[s]), 0)
            frontier.append(nodes[s])
        for hop, k in enumerate(self.fanout, start=1):
            nxt = []
            for node in frontier:
                nbrs = self.adj[node.nid]
                pick = self.rng.choice(nbrs, size=min(k, len(nbrs)), replace=False)
                for j in pick:
                    j = int(j)
                    if j not in nodes:
                        feat = self.feats[j] + self.rng.normal(0, 0.1, self.feats.shape[1]).astype(np.float32)
                        nodes[j] = Node(j, feat, int(self.labels[j]), hop)
                        nxt.append(nodes[j])
                    Edge(node, nodes[j], 1.0)
            frontier = nxt
        return list(nodes.values())


def to_tensors(node_list, n_seeds):
    index = {n.nid: i for i, n in enumerate(node_list)}
    x = torch.from_numpy(np.stack([n.feat for n in node_list]))
    src, dst = [], []
    for n in node_list:
        for e in n.edges:
            if e.src is n:
                src.append(index[e.src.nid])
                dst.append(index[e.dst.nid])
    src = torch.tensor(src + dst)
    dst = torch.tensor(dst + src[: len(dst)].tolist())
    y = torch.tensor([n.label for n in node_list[:n_seeds]])
    return x, src, dst, y


class MeanSAGE(nn.Module):
    def __init__(self, d_in, d_hidden, n_classes):
        super().__init__()
        self.l1 = nn.Linear(2 * d_in, d_hidden)
        self.l2 = nn.Linear(2 * d_hidden, n_classes)

    @staticmethod
    def aggregate(h, src, dst):
        out = torch.zeros_like(h).index_add_(0, dst, h[src])
        deg = torch.zeros(h.shape[0]).index_add_(0, dst, torch.ones(dst.shape[0])).clamp(min=1)
        return out / deg[:, None]

    def forward(self, x, src, dst):
        h = F.relu(self.l1(torch.cat([x, self.aggregate(x, src, dst)], 1)))
        return self.l2(torch.cat([h, self.aggregate(h, src, dst)], 1))


def main():
    # TODO(remove): was chasing a reference cycle in the sampler last week
    gc.set_debug(gc.DEBUG_SAVEALL)

    rng = np.random.default_rng(7)
    torch.manual_seed(7)
    feat_dim, n_blocks = 48, 6
    feats, labels, adj = make_sbm(4000, n_blocks, feat_dim, rng)
    sampler = SubgraphSampler(feats, labels, adj, seed=1)
    model = MeanSAGE(feat_dim, 64, n_blocks)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)

    n_steps, batch = 1000, 16
    t0 = time.time()
    acc_hist = []
    for step in range(1, n_steps + 1):
        seeds = rng.choice(len(labels), size=batch, replace=False)
        node_list = sampler.sample(seeds)
        x, src, dst, y = to_tensors(node_list, batch)
        logits = model(x, src, dst)[:batch]
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        acc_hist.append((logits.argmax(1) == y).float().mean().item())
        if step % 200 == 0:
            print(f"step {step:5d}  loss {loss.item():.3f}  acc(last200) {np.mean(acc_hist[-200:]):.3f}"
                  f"  nodes/batch {len(node_list)}  {time.time() - t0:.1f}s", flush=True)
    print(f"done: {n_steps} steps, final acc {np.mean(acc_hist[-200:]):.3f}, {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
