# expect: leak
# holder: window.graph|TransactionWindow.graph|graph._node|graph._adj
# pattern: online payment-risk learner over a sliding-window transaction graph (networkx.Graph of accounts and merchants, an MLP edge scorer on [payer profile, payee profile, edge features] trained online with torch.optim.Adam, one update per tick of 160 transactions, ~5 ms per tick, code in main() + a TransactionWindow class); every tick new transactions are added as edges with their timestamp, and TransactionWindow.expire() removes the edges older than the 4 s window with graph.remove_edges_from(), but never removes the endpoint nodes that are left without edges; regular accounts and merchants come back, but ~18% of payers are one-off guest checkouts with a fresh account id, so their nodes (attribute dict with a 48-float profile vector, counters and first-seen time, ~1.5 KB with the networkx adjacency dicts) stay in the graph after their only edge expires and graph._node / graph._adj grow for the whole run
# step_ms: 5
"""Online payment-risk scoring over a sliding transaction graph.

Each tick brings a micro-batch of card transactions.  Payers and payees
are nodes of an undirected networkx graph whose edges are the
transactions of the last few seconds; node attributes hold a rolling
behaviour profile.  An MLP scores each new transaction from the two
endpoint profiles and the transaction features, and is updated online
as soon as the (simulated) confirmation labels arrive.  Every couple of
seconds the connected components of the live window are scanned for
suspicious rings.
"""
from __future__ import annotations

import argparse
import itertools
import logging
import time
from collections import deque
from dataclasses import dataclass

import networkx as nx
import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
log = logging.getLogger("risk")

PROFILE_DIM = 48
EDGE_DIM = 8


@dataclass
class Txn:
    tid: int
    payer: str
    payee: str
    amount: float
    feats: np.ndarray
    label: int


class TransactionWindow:
    """Sliding window of recent transactions as a graph."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.graph = nx.Graph()
        self._edge_times: deque[tuple[float, str, str]] = deque()

    def profile(self, node: str) -> np.ndarray:
        data = self.graph.nodes[node]
        return data["profile"]

    def touch(self, node: str, kind: str, now: float) -> None:
        if node not in self.graph:
            self.graph.add_node(node, kind=kind, profile=np.zeros(PROFILE_DIM, dtype=np.float32),
                                first_seen=now, n_txn=0, n_flagged=0)

    def add(self, txn: Txn, score: float, now: float) -> None:
        g = self.graph
        for node in (txn.payer, txn.payee):
            d = g.nodes[node]
            d["n_txn"] += 1
            d["n_flagged"] += int(score > 0.5)
            p = d["profile"]
            p[:EDGE_DIM] += 0.2 * (txn.feats - p[:EDGE_DIM])
            p[EDGE_DIM] = np.log1p(d["n_txn"])
            p[EDGE_DIM + 1] = d["n_flagged"] / d["n_txn"]
            p[EDGE_DIM + 2] = min(now - d["first_seen"], 60.0) / 60.0
            p[EDGE_DIM + 3] = g.degree(node) / 10.0
        g.add_edge(txn.payer, txn.payee, t=now, amount=txn.amount, score=score)
        self._edge_times.append((now, txn.payer, txn.payee))

    def expire(self, now: float) -> int:
        cutoff = now - self.window_s
        old = []
        while self._edge_times and self._edge_times[0][0] < cutoff:
            t, u, v = self._edge_times.popleft()
            if self.graph.has_edge(u, v) and self.graph.edges[u, v]["t"] <= t:
                old.append((u, v))
        self.graph.remove_edges_from(old)
        return len(old)

    def suspicious_rings(self, min_size: int = 3, threshold: float = 0.25) -> list[set]:
        """Connected groups of accounts/merchants linked by high-risk transactions."""
        hot = [(u, v) for u, v, d in self.graph.edges(data=True) if d["score"] > threshold]
        sub = self.graph.edge_subgraph(hot)
        return [c for c in nx.connected_components(sub) if len(c) >= min_size]


class EdgeScorer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * PROFILE_DIM + EDGE_DIM, 128), nn.ReLU(),
                                 nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


class PaymentStream:
    def __init__(self, seed: int, n_accounts: int, n_merchants: int, guest_rate: float) -> None:
        self.rng = np.random.default_rng(seed)
        self.n_accounts, self.n_merchants = n_accounts, n_merchants
        self.guest_rate = guest_rate
        self.tid = itertools.count()
        self.guest = itertools.count()
        self.fraud_merchants = set(self.rng.choice(n_merchants, 25, replace=False).tolist())
        self.mule_accounts = set(self.rng.choice(2000, 150, replace=False).tolist())

    def tick(self, n: int) -> list[Txn]:
        out = []
        for _ in range(n):
            if self.rng.random() < self.guest_rate:
                payer, acct = f"guest:{next(self.guest)}", -1
            else:
                acct = int(self.rng.zipf(1.3)) % self.n_accounts
                payer = f"acct:{acct}"
            m = int(self.rng.integers(0, self.n_merchants))
            amount = float(self.rng.lognormal(3.0, 1.0))
            fraud = (m in self.fraud_merchants and acct in self.mule_accounts) or \
                    (acct < 0 and m in self.fraud_merchants and self.rng.random() < 0.5)
            feats = np.array([np.log1p(amount), self.rng.random(), float(acct < 0),
                              float(amount > 500), self.rng.normal(), self.rng.normal(),
                              float(fraud) * 0.5 + self.rng.normal(0, 0.35), self.rng.random()],
                             dtype=np.float32)
            out.append(Txn(next(self.tid), payer, f"mch:{m}", amount, feats, int(fraud)))
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description="online payment-risk scoring")
    ap.add_argument("--ticks", type=int, default=3000)
    ap.add_argument("--txn-per-tick", type=int, default=160)
    ap.add_argument("--window-s", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=17)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.manual_seed(args.seed)

    stream = PaymentStream(args.seed, n_accounts=20000, n_merchants=600, guest_rate=0.18)
    window = TransactionWindow(args.window_s)
    model = EdgeScorer()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    bce = nn.BCEWithLogitsLoss()
    loss_ema = None
    n_rings = 0
    t0 = last = last_scan = time.perf_counter()
    for tick in range(1, args.ticks + 1):
        now = time.perf_counter()
        txns = stream.tick(args.txn_per_tick)
        for t in txns:
            window.touch(t.payer, "account", now)
            window.touch(t.payee, "merchant", now)
        x = np.stack([np.concatenate([window.profile(t.payer), window.profile(t.payee), t.feats])
                      for t in txns])
        xb = torch.from_numpy(x)
        y = torch.tensor([t.label for t in txns], dtype=torch.float32)
        logits = model(xb)
        loss = bce(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        scores = torch.sigmoid(logits.detach()).numpy()
        for t, s in zip(txns, scores):
            window.add(t, float(s), now)
        window.expire(now)
        loss_ema = loss.item() if loss_ema is None else 0.97 * loss_ema + 0.03 * loss.item()
        if now - last_scan > 2.0:
            n_rings = len(window.suspicious_rings())
            last_scan = now
        if now - last > 3.0 or tick == args.ticks:
            g = window.graph
            log.info("tick %d/%d loss_ema=%.4f edges=%d nodes=%d rings=%d (%.1f ms/tick)", tick,
                     args.ticks, loss_ema, g.number_of_edges(), g.number_of_nodes(), n_rings,
                     1000 * (now - t0) / tick)
            last = now


if __name__ == "__main__":
    main()
