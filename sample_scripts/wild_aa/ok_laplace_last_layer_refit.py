# expect: no_leak
# pattern: bearing-fault classifier (MLP on synthetic vibration features, torch.optim.Adam, ~3 ms steps, 16 s budget, code in main() + a LastLayerLaplace class) with a Bayesian last layer refitted every 500 steps: LastLayerLaplace.fit() builds the full generalised Gauss-Newton matrix of the 8x257 last-layer weights (2056x2056 float64, 34 MB) block by block from 1536 held-in rows, grid-searches the prior precision by the Laplace marginal likelihood (one Cholesky of H + lambda*I per candidate) and keeps only the MAP weights and the Cholesky factor of the chosen posterior precision, replacing the previous fit; MC predictive evaluation draws 64 weight samples through a triangular solve; memory jumps once when the first posterior is stored and spikes by ~100-150 MB during every refit, but each refit's temporaries die with fit() and the stored factor is replaced, not accumulated
# step_ms: 3
"""Bearing fault classification with a last-layer Laplace approximation.

The point estimate is trained as usual; every few hundred steps a Laplace
posterior over the last layer is refitted so that the monitoring dashboard
gets calibrated fault probabilities (checked by NLL / ECE against the MAP).
"""
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

N_CLASSES = 8
N_FEAT = 40
HID = 256
BATCH = 128
REFIT_EVERY = 500
FIT_ROWS = 1536
RUN_SECONDS = 16.0


def make_bearings(n, rng):
    """Band energies, kurtosis, crest factor etc. with class-specific fault signatures."""
    y = rng.integers(0, N_CLASSES, n)
    centers = np.random.default_rng(123).normal(0, 1.0, (N_CLASSES, N_FEAT))
    x = centers[y] + rng.normal(0, 2.6, (n, N_FEAT))
    x[:, :8] += 0.6 * np.sin(x[:, 8:16] * 1.7)
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)


class FaultNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(N_FEAT, HID), nn.ReLU(), nn.Linear(HID, HID), nn.ReLU())
        self.last = nn.Linear(HID, N_CLASSES)

    def features(self, x):
        return self.body(x)

    def forward(self, x):
        return self.last(self.body(x))


class LastLayerLaplace:
    def __init__(self, model):
        self.model = model
        self.mean = None
        self.chol = None
        self.prior_prec = None

    @torch.no_grad()
    def fit(self, x, y, n_total, grid=(0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0)):
        phi = self.model.features(x)
        phi = torch.cat([phi, torch.ones(phi.shape[0], 1)], 1).double()
        p = F.softmax(self.model(x), -1).double()
        f = phi.shape[1]
        c = N_CLASSES
        H = torch.zeros(c * f, c * f, dtype=torch.float64)
        for i in range(c):
            for j in range(i, c):
                lam = p[:, i] * ((1.0 if i == j else 0.0) - p[:, j])
                block = (phi * lam[:, None]).T @ phi
                H[i * f:(i + 1) * f, j * f:(j + 1) * f] = block
                if i != j:
                    H[j * f:(j + 1) * f, i * f:(i + 1) * f] = block.T
        scale = n_total / x.shape[0]  # the subset stands in for the whole training set
        H *= scale
        w = torch.cat([self.model.last.weight, self.model.last.bias[:, None]], 1).double().reshape(-1)
        nll = F.cross_entropy(self.model(x), y, reduction="sum").double() * scale
        best = None
        for lam in grid:
            prec = H + lam * torch.eye(c * f, dtype=torch.float64)
            L, info = torch.linalg.cholesky_ex(prec)
            if int(info) != 0:
                continue
            logdet_post = 2 * torch.log(torch.diagonal(L)).sum()
            log_marglik = -nll - 0.5 * lam * (w @ w) + 0.5 * (c * f) * math.log(lam) - 0.5 * logdet_post
            if best is None or log_marglik > best[0]:
                best = (float(log_marglik), lam, L)
        _, self.prior_prec, self.chol = best
        self.mean = w
        return best[0]

    @torch.no_grad()
    def predict(self, x, n_samples=64, gen=None):
        phi = torch.cat([self.model.features(x), torch.ones(x.shape[0], 1)], 1).double()
        z = torch.randn(self.mean.shape[0], n_samples, dtype=torch.float64, generator=gen)
        eps = torch.linalg.solve_triangular(self.chol.T, z, upper=True)  # cov = (L L^T)^-1
        ws = (self.mean[:, None] + eps).T.reshape(n_samples, N_CLASSES, -1)
        logits = torch.einsum("nf,scf->snc", phi, ws)
        return F.softmax(logits, -1).mean(0).float()


def ece(probs, y, bins=15):
    conf, pred = probs.max(1)
    edges = torch.linspace(0, 1, bins + 1)
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (conf > lo) & (conf <= hi)
        if m.any():
            total += m.float().mean() * ((pred[m] == y[m]).float().mean() - conf[m].mean()).abs()
    return float(total)


def main():
    rng = np.random.default_rng(8)
    torch.manual_seed(8)
    x_train, y_train = make_bearings(40000, rng)
    x_val, y_val = make_bearings(4000, rng)
    model = FaultNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    la = LastLayerLaplace(model)
    gen = torch.Generator().manual_seed(0)
    t0 = time.perf_counter()
    step = 0
    while time.perf_counter() - t0 < RUN_SECONDS:
        step += 1
        idx = torch.randint(0, x_train.shape[0], (BATCH,))
        loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % REFIT_EVERY == 0:
            fit_idx = torch.randint(0, x_train.shape[0], (FIT_ROWS,))
            lml = la.fit(x_train[fit_idx], y_train[fit_idx], x_train.shape[0])
            with torch.no_grad():
                p_map = F.softmax(model(x_val), -1)
            p_la = la.predict(x_val, gen=gen)
            nll_map = F.nll_loss(p_map.clamp_min(1e-8).log(), y_val).item()
            nll_la = F.nll_loss(p_la.clamp_min(1e-8).log(), y_val).item()
            print(f"step {step:5d}  loss {loss.item():.3f}  prior prec {la.prior_prec:5.2f}  log-ML {lml:9.1f}  "
                  f"NLL map/la {nll_map:.3f}/{nll_la:.3f}  ECE map/la {ece(p_map, y_val):.3f}/{ece(p_la, y_val):.3f}")
    print(f"done: {step} steps")


if __name__ == "__main__":
    main()
