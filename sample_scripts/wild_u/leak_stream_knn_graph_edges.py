# expect: leak
# holder: graph.G|self.G|G._node|G._adj
# pattern: streaming semi-supervised learning on a drifting 10-class Gaussian-mixture stream: an MLP encoder trained with torch.optim.Adam on the few labelled points plus confident pseudo-labels, and an online kNN graph (networkx) over the embeddings on which labels are propagated (~48 ms per step of 48 new points, code in main() + StreamGraph/Encoder/Trainer classes); every new point becomes a node of StreamGraph.G with its raw 384-d float32 feature vector and embedding as node attributes, and is linked to its k nearest neighbours among the recent nodes; the sliding window is enforced by expiring edges (G.remove_edges_from on the edges added `window` steps ago), which leaves the old nodes in the graph as isolated nodes that keep their attribute dicts (raw features, embeddings), so G._node / G._adj grow by 48 nodes (~100 KB) every step; propagation and kNN search only ever look at the recent-node deque, so nothing reads the old nodes
# step_ms: 48
"""Online label propagation on a streaming kNN graph.

A drifting stream of 384-d observations arrives in mini-batches; only 5% of
them are labelled. We keep

  * an MLP encoder (384 -> 128 -> 32) trained online on the labelled points
    and on pseudo-labels produced by the graph,
  * a kNN graph over the embeddings of the most recent points,
  * label propagation (Zhou et al., 2004) on that graph to label the rest.

The graph is a networkx.Graph so that it can be inspected and exported for
the paper figures (node attributes: raw features, embedding, label, time).

Main options (defaults):
    --steps 420 --window 40
"""
import argparse
import collections
import os
import time
from dataclasses import dataclass

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import networkx as nx
import numpy as np
import scipy.sparse as sp
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


@dataclass
class Config:
    dim: int = 384
    n_classes: int = 10
    batch: int = 48
    label_frac: float = 0.05
    k: int = 8
    window: int = 40          # steps an edge stays in the graph
    alpha: float = 0.9        # propagation damping
    prop_iters: int = 12
    pseudo_conf: float = 0.8
    lr: float = 2e-3
    drift: float = 0.004


class DriftingMixture:
    """Class means rotate slowly in a random 2-D plane per class."""

    def __init__(self, cfg, rng):
        self.cfg, self.rng = cfg, rng
        self.mu = rng.normal(0, 1.0, (cfg.n_classes, cfg.dim)).astype(np.float32)
        self.dir = rng.normal(0, 1.0, (cfg.n_classes, cfg.dim)).astype(np.float32)
        self.t = 0

    def sample(self):
        cfg = self.cfg
        self.t += 1
        mu = self.mu * np.cos(cfg.drift * self.t) + self.dir * np.sin(cfg.drift * self.t)
        y = self.rng.integers(0, cfg.n_classes, cfg.batch)
        x = mu[y] + self.rng.normal(0, 2.4, (cfg.batch, cfg.dim)).astype(np.float32)
        labelled = self.rng.random(cfg.batch) < cfg.label_frac
        return x.astype(np.float32), y, labelled


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(cfg.dim, 128), nn.GELU(), nn.Linear(128, 32))
        self.head = nn.Linear(32, cfg.n_classes)

    def forward(self, x):
        z = self.body(x)
        return z, self.head(z)


class StreamGraph:
    def __init__(self, cfg):
        self.cfg = cfg
        self.G = nx.Graph()
        self.recent = collections.deque()          # node ids inside the window
        self.edge_log = collections.deque()        # (step, edges added at that step)
        self.next_id = 0

    def add_batch(self, step, x, z, y_obs):
        cfg = self.cfg
        ids = list(range(self.next_id, self.next_id + len(x)))
        self.next_id += len(x)
        for i, nid in enumerate(ids):
            self.G.add_node(nid, x=x[i].copy(), z=z[i].copy(), y=int(y_obs[i]), t=step)

        new_edges = []
        if self.recent:
            ref = np.stack([self.G.nodes[n]["z"] for n in self.recent])
            d2 = ((z[:, None, :] - ref[None]) ** 2).sum(-1)
            k = min(cfg.k, len(self.recent))
            nn_idx = np.argpartition(d2, k - 1, axis=1)[:, :k]
            sigma2 = np.median(d2) + 1e-6
            recent = list(self.recent)
            for i, nid in enumerate(ids):
                for j in nn_idx[i]:
                    w = float(np.exp(-d2[i, j] / sigma2))
                    new_edges.append((nid, recent[j], w))
        self.G.add_weighted_edges_from(new_edges, weight="w")
        self.edge_log.append((step, [(u, v) for u, v, _ in new_edges]))
        self.recent.extend(ids)

        # expire what fell out of the window
        while self.edge_log and self.edge_log[0][0] <= step - cfg.window:
            _, old = self.edge_log.popleft()
            self.G.remove_edges_from(old)
        horizon = cfg.window * cfg.batch
        while len(self.recent) > horizon:
            self.recent.popleft()
        return ids

    def propagate(self):
        cfg = self.cfg
        nodes = list(self.recent)
        H = self.G.subgraph(nodes)
        W = nx.to_scipy_sparse_array(H, nodelist=nodes, weight="w", format="csr")
        deg = np.asarray(W.sum(axis=1)).ravel() + 1e-8
        Dm = sp.diags(1.0 / np.sqrt(deg))
        S = Dm @ W @ Dm
        y_obs = np.array([self.G.nodes[n]["y"] for n in nodes])
        Y0 = np.zeros((len(nodes), cfg.n_classes))
        lab = y_obs >= 0
        Y0[lab, y_obs[lab]] = 1.0
        Fm = Y0.copy()
        for _ in range(cfg.prop_iters):
            Fm = cfg.alpha * (S @ Fm) + (1 - cfg.alpha) * Y0
        P = Fm / (Fm.sum(1, keepdims=True) + 1e-12)
        return nodes, P


class Trainer:
    def __init__(self, cfg, model):
        self.cfg = cfg
        self.model = model
        self.opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)

    def step(self, x, y, w):
        if len(x) == 0:
            return 0.0
        _, logits = self.model(torch.from_numpy(x))
        loss = (F.cross_entropy(logits, torch.from_numpy(y), reduction="none") * torch.from_numpy(w)).mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss.item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=420)
    ap.add_argument("--window", type=int, default=40)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--log-every", type=int, default=70)
    args = ap.parse_args()

    cfg = Config(window=args.window)
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    stream = DriftingMixture(cfg, rng)
    model = Encoder(cfg)
    trainer = Trainer(cfg, model)
    graph = StreamGraph(cfg)
    true_label = {}
    acc_hist, loss_hist = collections.deque(maxlen=50), collections.deque(maxlen=50)

    t0 = time.time()
    for step in range(1, args.steps + 1):
        x, y, labelled = stream.sample()
        with torch.no_grad():
            z, _ = model(torch.from_numpy(x))
        y_obs = np.where(labelled, y, -1)
        ids = graph.add_batch(step, x, z.numpy(), y_obs)
        true_label.update(zip(ids, y.tolist()))

        nodes, P = graph.propagate()
        pred = P.argmax(1)
        conf = P.max(1)
        y_true = np.array([true_label[n] for n in nodes])
        acc_hist.append(float((pred == y_true).mean()))

        # train on the labelled points of the window + confident pseudo-labels
        pick = rng.choice(len(nodes), size=min(256, len(nodes)), replace=False)
        feats = np.stack([graph.G.nodes[nodes[i]]["x"] for i in pick])
        obs = np.array([graph.G.nodes[nodes[i]]["y"] for i in pick])
        tgt = np.where(obs >= 0, obs, pred[pick])
        wts = np.where(obs >= 0, 1.0, (conf[pick] > cfg.pseudo_conf) * 0.5).astype(np.float32)
        loss_hist.append(trainer.step(feats, tgt.astype(np.int64), wts))

        # ground truth is only needed while a node can still be evaluated
        if len(true_label) > 4 * len(graph.recent):
            for n in list(true_label)[: len(true_label) - len(graph.recent)]:
                del true_label[n]

        if step % args.log_every == 0:
            print(f"step {step:4d}  window nodes {len(nodes):5d}  edges {graph.G.number_of_edges():6d}  "
                  f"prop acc {np.mean(acc_hist):.3f}  loss {np.mean(loss_hist):.3f}  "
                  f"{(time.time() - t0) / step * 1e3:.1f} ms/step", flush=True)

    print(f"finished {args.steps} steps; final propagated accuracy {np.mean(acc_hist):.3f}")


if __name__ == "__main__":
    main()
