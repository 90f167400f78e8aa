# expect: leak
# holder: self._values|Molecule.edge_rbf._values|Molecule.norm_adj._values|Molecule.lap_pe._values
# pattern: molecular property regression with a message-passing GNN (torch.optim.AdamW); Molecule uses __slots__, so its derived features (normalised adjacency, Laplacian eigenvector encodings, RBF edge features) are memoised by a home-made lazy_attr descriptor in a dict on the descriptor keyed by the instance; every training step builds new coordinate-jittered Molecule copies, and the class-level descriptor dicts keep every one of them and its features alive
# step_ms: 90
"""Message-passing network for molecular energy regression.

Molecules are small synthetic organic-like graphs (10-36 heavy atoms) with 3D
coordinates and a reference energy from a pairwise Morse potential.  Each
training step samples molecules from the pool and jitters their coordinates
(conformer noise augmentation); the network gets atom types, Laplacian
positional encodings and radial-basis edge features.
"""
import argparse
import time

import numpy as np
import torch
from torch import nn

N_TYPES = 6
RBF_CENTERS = np.linspace(0.8, 2.4, 16)


class lazy_attr:
    """Compute an attribute once per object.

    functools.cached_property needs an instance __dict__, which Molecule does
    not have (it uses __slots__ to keep the pool small), so values are kept here.
    """

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__
        self._values = {}

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        try:
            return self._values[obj]
        except KeyError:
            value = self._values[obj] = self.fn(obj)
            return value


class Molecule:
    __slots__ = ("types", "bonds", "coords", "energy")

    def __init__(self, types, bonds, coords, energy):
        self.types, self.bonds, self.coords, self.energy = types, bonds, coords, energy

    @property
    def n_atoms(self):
        return len(self.types)

    def jittered(self, rng, sigma=0.04):
        return Molecule(self.types, self.bonds,
                        self.coords + rng.normal(0, sigma, self.coords.shape).astype(np.float32),
                        self.energy)

    @lazy_attr
    def norm_adj(self):
        n = self.n_atoms
        a = np.eye(n, dtype=np.float32)
        a[self.bonds[:, 0], self.bonds[:, 1]] = 1
        a[self.bonds[:, 1], self.bonds[:, 0]] = 1
        d = 1 / np.sqrt(a.sum(1))
        return a * d[:, None] * d[None]

    @lazy_attr
    def lap_pe(self):
        """First 8 non-trivial eigenvectors of the normalised Laplacian."""
        lap = np.eye(self.n_atoms, dtype=np.float32) - self.norm_adj
        _, vecs = np.linalg.eigh(lap)
        pe = np.zeros((self.n_atoms, 8), np.float32)
        k = min(8, self.n_atoms - 1)
        pe[:, :k] = vecs[:, 1:k + 1]
        return pe

    @lazy_attr
    def edge_rbf(self):
        """Radial basis expansion of the bond lengths, one row per directed bond."""
        src = np.concatenate([self.bonds[:, 0], self.bonds[:, 1]])
        dst = np.concatenate([self.bonds[:, 1], self.bonds[:, 0]])
        dist = np.linalg.norm(self.coords[src] - self.coords[dst], axis=1)
        rbf = np.exp(-((dist[:, None] - RBF_CENTERS) ** 2) / 0.1).astype(np.float32)
        return src, dst, rbf


def random_molecule(rng):
    n = int(rng.integers(10, 37))
    types = rng.choice(N_TYPES, size=n, p=[0.45, 0.2, 0.15, 0.1, 0.05, 0.05])
    # random spanning tree plus a few ring closures
    parents = [int(rng.integers(0, i)) for i in range(1, n)]
    bonds = [(p, i) for i, p in zip(range(1, n), parents)]
    for _ in range(n // 6):
        i, j = rng.choice(n, 2, replace=False)
        bonds.append((int(i), int(j)))
    bonds = np.array(bonds)
    coords = np.zeros((n, 3), np.float32)
    for i, p in zip(range(1, n), parents):
        v = rng.normal(size=3)
        coords[i] = coords[p] + 1.45 * v / np.linalg.norm(v)
    return Molecule(types, bonds, coords, 0.0)


def reference_energy(mol, eps):
    diff = mol.coords[:, None] - mol.coords[None]
    r = np.maximum(np.sqrt((diff ** 2).sum(-1)), 0.9)
    e = eps[mol.types]
    morse = np.sqrt(e[:, None] * e[None]) * (np.exp(-2 * (r - 1.5)) - 2 * np.exp(-(r - 1.5)))
    return float(np.triu(morse, 1).sum() + e.sum())


def collate(mols):
    offsets = np.cumsum([0] + [m.n_atoms for m in mols[:-1]])
    types = torch.from_numpy(np.concatenate([m.types for m in mols]))
    pe = torch.from_numpy(np.concatenate([m.lap_pe for m in mols]))
    src, dst, rbf = [], [], []
    for off, m in zip(offsets, mols):
        s, d, r = m.edge_rbf
        src.append(s + off)
        dst.append(d + off)
        rbf.append(r)
    graph = torch.from_numpy(np.repeat(np.arange(len(mols)), [m.n_atoms for m in mols]))
    return (types, pe, torch.from_numpy(np.concatenate(src)), torch.from_numpy(np.concatenate(dst)),
            torch.from_numpy(np.concatenate(rbf)), graph,
            torch.tensor([m.energy for m in mols], dtype=torch.float32))


class MPNN(nn.Module):
    def __init__(self, hidden=256, layers=6):
        super().__init__()
        self.embed = nn.Embedding(N_TYPES, hidden)
        self.pe_proj = nn.Linear(8, hidden)
        self.edge_nets = nn.ModuleList(nn.Linear(len(RBF_CENTERS), hidden) for _ in range(layers))
        self.updates = nn.ModuleList(
            nn.Sequential(nn.Linear(2 * hidden, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
            for _ in range(layers))
        self.readout = nn.Sequential(nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 1))

    def forward(self, types, pe, src, dst, rbf, graph, n_graphs):
        h = self.embed(types) + self.pe_proj(pe)
        for edge_net, update in zip(self.edge_nets, self.updates):
            msg = h[src] * edge_net(rbf)
            agg = torch.zeros_like(h).index_add_(0, dst, msg)
            h = h + update(torch.cat([h, agg], 1))
        atom_e = self.readout(h).squeeze(1)
        return torch.zeros(n_graphs).index_add_(0, graph, atom_e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pool", type=int, default=3000)
    ap.add_argument("--steps", type=int, default=240)
    ap.add_argument("--batch", type=int, default=40)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    eps = rng.uniform(0.5, 2.0, N_TYPES)
    pool = []
    for _ in range(args.pool):
        m = random_molecule(rng)
        m.energy = reference_energy(m, eps)
        pool.append(m)
    energies = np.array([m.energy for m in pool])
    mu, sd = energies.mean(), energies.std()
    print(f"pool of {len(pool)} molecules, energy {mu:.1f} +- {sd:.1f}")

    model = MPNN()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.steps)
    t0 = time.time()
    window = []
    for step in range(1, args.steps + 1):
        picks = rng.choice(len(pool), args.batch, replace=False)
        mols = [pool[i].jittered(rng) for i in picks]
        types, pe, src, dst, rbf, graph, target = collate(mols)
        pred = model(types, pe, src, dst, rbf, graph, len(mols))
        loss = nn.functional.smooth_l1_loss(pred, (target - mu) / sd)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        sched.step()
        window.append(loss.item())
        if step % 40 == 0:
            mae = np.mean(np.abs(pred.detach().numpy() * sd + mu - target.numpy()))
            print(f"step {step:4d}  loss {np.mean(window):.4f}  batch MAE {mae:.2f}  "
                  f"({time.time() - t0:.1f}s)", flush=True)
            window.clear()

    print(f"finished {args.steps} steps in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
