# expect: no_leak
# pattern: differentially private training (DP-SGD) of a readmission-risk MLP on synthetic patient records, written with torch.func (functional_call + vmap(grad(...)) per-sample gradients, torch.optim.SGD with momentum on the real parameters, ~270 ms per logical step, 16 s budget, code in main() + DPTrainer/RDPAccountant classes); each logical batch is Poisson-sampled (its size varies around 1000) and split into physical chunks of at most 256 rows, and every chunk materialises per-sample gradients for all ~85k parameters (~85 MB) plus their per-sample norms and clipped copies before they are summed into one parameter-sized accumulator; memory therefore swings by 100-200 MB inside every step with a height that depends on the random chunk sizes, and the privacy accountant memoises RDP values with functools.lru_cache over a finite set of (q, sigma, order) keys and counts steps in a Counter; nothing survives a step except the accumulator, momentum buffers and a few floats
# step_ms: 270
"""DP-SGD for a readmission-risk model with per-sample gradients via torch.func.

Poisson sampling with rate q, per-example clipping to C, Gaussian noise
with multiplier sigma; privacy spent is tracked with an RDP accountant.
"""
import collections
import functools
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

torch.set_num_threads(1)

N_TRAIN = 60000
N_FEAT = 71
SAMPLE_RATE = 1000 / N_TRAIN
MAX_PHYSICAL = 256
CLIP = 1.0
SIGMA = 1.1
DELTA = 1e-5
RUN_SECONDS = 16.0
ORDERS = tuple(range(2, 65))


def make_records(n, rng):
    age = rng.uniform(18, 95, n)
    n_prior = rng.poisson(1.2, n)
    los = rng.gamma(2.0, 2.5, n)
    labs = rng.normal(0, 1, (n, 40))
    dx = (rng.random((n, 28)) < 0.08).astype(np.float64)
    logit = (-2.2 + 0.025 * (age - 60) + 0.45 * n_prior + 0.08 * los + labs[:, :6] @ np.linspace(0.4, -0.3, 6)
             + dx[:, :5] @ np.array([0.9, 0.7, -0.4, 0.5, 1.1]) + 0.3 * labs[:, 6] * dx[:, 0])
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    x = np.column_stack([(age - 60) / 20, n_prior, np.log1p(los), labs, dx]).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y)


class RiskMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(N_FEAT, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(),
                                 nn.Linear(256, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


class RDPAccountant:
    def __init__(self):
        self.steps = collections.Counter()

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def _rdp(q, sigma, alpha):
        """RDP of the Poisson-subsampled Gaussian mechanism at integer order alpha."""
        terms = []
        for k in range(alpha + 1):
            log_b = math.lgamma(alpha + 1) - math.lgamma(k + 1) - math.lgamma(alpha - k + 1)
            terms.append(log_b + (alpha - k) * math.log1p(-q) + k * math.log(q) + (k * k - k) / (2 * sigma ** 2))
        m = max(terms)
        return (m + math.log(sum(math.exp(t - m) for t in terms))) / (alpha - 1)

    def step(self, q, sigma):
        self.steps[(q, sigma)] += 1

    def epsilon(self, delta):
        best = float("inf")
        for alpha in ORDERS:
            rdp = sum(n * self._rdp(q, s, alpha) for (q, s), n in self.steps.items())
            best = min(best, rdp + math.log(1 / delta) / (alpha - 1))
        return best


class DPTrainer:
    def __init__(self, model, lr=0.5):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        self.names = [n for n, _ in model.named_parameters()]
        self.acct = RDPAccountant()

        def loss_one(params, x, y):
            logit = functional_call(self.model, params, (x.unsqueeze(0),))
            return F.binary_cross_entropy_with_logits(logit, y.unsqueeze(0))

        self.per_sample_grads = vmap(grad(loss_one), in_dims=(None, 0, 0))

    def step(self, x, y, gen):
        params = {n: p.detach() for n, p in self.model.named_parameters()}
        acc = {n: torch.zeros_like(p) for n, p in params.items()}
        n_logical = x.shape[0]
        for start in range(0, n_logical, MAX_PHYSICAL):
            xb, yb = x[start:start + MAX_PHYSICAL], y[start:start + MAX_PHYSICAL]
            g = self.per_sample_grads(params, xb, yb)
            norms = torch.sqrt(sum(g[n].flatten(1).pow(2).sum(1) for n in self.names))
            scale = (CLIP / (norms + 1e-6)).clamp(max=1.0)
            for n in self.names:
                acc[n] += torch.einsum("b,b...->...", scale, g[n])
        expected = SAMPLE_RATE * N_TRAIN
        for n, p in self.model.named_parameters():
            noise = torch.randn(p.shape, generator=gen) * (SIGMA * CLIP)
            p.grad = (acc[n] + noise) / expected
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.acct.step(SAMPLE_RATE, SIGMA)
        return n_logical


@torch.no_grad()
def auc(model, x, y):
    s = model(x)
    order = torch.argsort(s)
    ranks = torch.empty_like(order, dtype=torch.float32)
    ranks[order] = torch.arange(1, len(s) + 1, dtype=torch.float32)
    pos = y > 0.5
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def main():
    rng = np.random.default_rng(2)
    torch.manual_seed(2)
    x_train, y_train = make_records(N_TRAIN, rng)
    x_test, y_test = make_records(8000, rng)
    model = RiskMLP()
    trainer = DPTrainer(model)
    gen = torch.Generator().manual_seed(1234)
    t0 = time.perf_counter()
    last = t0
    step = 0
    sizes = []
    while time.perf_counter() - t0 < RUN_SECONDS:
        step += 1
        mask = torch.rand(N_TRAIN, generator=gen) < SAMPLE_RATE  # Poisson sampling
        idx = mask.nonzero().squeeze(1)
        sizes.append(trainer.step(x_train[idx], y_train[idx], gen))
        if time.perf_counter() - last > 2.0:
            print(f"step {step:4d}  logical batch {sizes[-1]:4d}  test AUC {auc(model, x_test, y_test):.3f}  "
                  f"eps {trainer.acct.epsilon(DELTA):.2f} (delta={DELTA})")
            last = time.perf_counter()
    print(f"done: {step} steps, mean logical batch {np.mean(sizes):.0f}, "
          f"final AUC {auc(model, x_test, y_test):.3f}, eps {trainer.acct.epsilon(DELTA):.2f}")


if __name__ == "__main__":
    main()
