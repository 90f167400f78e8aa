# expect: no_leak
# holder:
# pattern: RealNVP-style normalizing flow on a 2-D pinwheel/moons mixture built from torch.distributions (TransformedDistribution over a custom AffineCoupling(Transform) with cache_size=1 whose conditioner MLPs live in an nn.ModuleList; torch.optim.Adam, ~19 ms steps, code at module level (FLOW, COUPLING_NETS globals) + main() + a SampleMonitor class); it looks like a tensor pile-up, because the module-global transforms keep tensors that carry the autograd graph between steps (the cached (x, y) pair of the last log_prob / sample call) and the monitor keeps sample clouds, but Transform(cache_size=1) holds exactly one (x, y) pair per transform and overwrites it on the next call, the graph it pins is one step's worth, and the monitor's clouds sit in a deque(maxlen=12), so memory is flat after the first evaluation
# step_ms: 19
"""RealNVP on a 2-D toy density, written with torch.distributions.

The flow is a TransformedDistribution whose transforms are affine coupling
layers (alternating masks); the conditioner networks are ordinary nn.Modules
collected in an nn.ModuleList for the optimizer.  Coupling transforms are
created with cache_size=1 so the x <-> y pair of the last call is reused by
log_abs_det_jacobian, which avoids one extra conditioner evaluation.

Every --eval-every steps we sample from the flow and compare the sample cloud
with fresh data using a sliced Wasserstein distance.

Usage:  python flow_coupling_distributions.py [--steps 1000] [--batch 512]
"""
import argparse
import collections
import math
import time

import torch
import torch.distributions as D
import torch.nn as nn
from torch.distributions import constraints
from torch.distributions.transforms import Transform

torch.manual_seed(0)
N_LAYERS = 8


class AffineCoupling(Transform):
    domain = constraints.real_vector
    codomain = constraints.real_vector
    bijective = True

    def __init__(self, net, mask, cache_size=1):
        super().__init__(cache_size=cache_size)
        self.net = net
        self.mask = mask

    def _params(self, x):
        h = self.net(x * self.mask)
        s, t = h.chunk(2, dim=-1)
        s = torch.tanh(s) * (1 - self.mask)
        t = t * (1 - self.mask)
        return s, t

    def _call(self, x):
        s, t = self._params(x)
        return x * torch.exp(s) + t

    def _inverse(self, y):
        s, t = self._params(y)          # masked coordinates are unchanged, so y gives the same s, t
        return (y - t) * torch.exp(-s)

    def log_abs_det_jacobian(self, x, y):
        s, _ = self._params(x)
        return s.sum(-1)


def conditioner(hidden=128):
    return nn.Sequential(nn.Linear(2, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(),
                         nn.Linear(hidden, 4))


COUPLING_NETS = nn.ModuleList(conditioner() for _ in range(N_LAYERS))
for net in COUPLING_NETS:
    nn.init.zeros_(net[-1].weight)
    nn.init.zeros_(net[-1].bias)
MASKS = [torch.tensor([1.0, 0.0]) if i % 2 == 0 else torch.tensor([0.0, 1.0]) for i in range(N_LAYERS)]
BASE = D.Independent(D.Normal(torch.zeros(2), torch.ones(2)), 1)
FLOW = D.TransformedDistribution(BASE, [AffineCoupling(n, m) for n, m in zip(COUPLING_NETS, MASKS)])


def sample_data(n, gen):
    """Pinwheel (5 arms) + a pair of moons, mixed 60/40."""
    n_pin = int(n * 0.6)
    arm = torch.randint(0, 5, (n_pin,), generator=gen).float()
    r = torch.randn(n_pin, generator=gen) * 0.3 + 1.0
    w = torch.randn(n_pin, generator=gen) * 0.05
    ang = arm * 2 * math.pi / 5 + 0.25 * torch.exp(r)
    pin = torch.stack([r * torch.cos(ang) - w * torch.sin(ang), r * torch.sin(ang) + w * torch.cos(ang)], 1) * 1.6
    n_moon = n - n_pin
    th = torch.rand(n_moon, generator=gen) * math.pi
    upper = torch.rand(n_moon, generator=gen) < 0.5
    mx = torch.where(upper, torch.cos(th), 1 - torch.cos(th))
    my = torch.where(upper, torch.sin(th), 0.5 - torch.sin(th))
    moon = torch.stack([mx, my], 1) * 1.2 + torch.tensor([3.0, -3.0]) + torch.randn(n_moon, 2, generator=gen) * 0.08
    return torch.cat([pin, moon])[torch.randperm(n, generator=gen)]


class SampleMonitor:
    def __init__(self, keep=12, n_proj=64):
        self.clouds = collections.deque(maxlen=keep)
        self.scores = []
        self.proj = torch.randn(2, n_proj)
        self.proj /= self.proj.norm(dim=0, keepdim=True)

    @torch.no_grad()
    def __call__(self, step, gen, n=4000):
        fake = FLOW.sample((n,))
        real = sample_data(n, gen)
        a = (fake @ self.proj).sort(0).values
        b = (real @ self.proj).sort(0).values
        swd = (a - b).abs().mean().item()
        self.clouds.append((step, fake))
        self.scores.append((step, swd))
        return swd


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--eval-every", type=int, default=100)
    args = ap.parse_args()

    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(1)
    opt = torch.optim.Adam(COUPLING_NETS.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps, eta_min=args.lr * 0.05)
    monitor = SampleMonitor()

    t0 = time.time()
    nll_ema = None
    for step in range(args.steps):
        x = sample_data(args.batch, gen)
        nll = -FLOW.log_prob(x).mean()
        opt.zero_grad(set_to_none=True)
        nll.backward()
        nn.utils.clip_grad_norm_(COUPLING_NETS.parameters(), 5.0)
        opt.step()
        sched.step()
        nll_ema = nll.item() if nll_ema is None else 0.98 * nll_ema + 0.02 * nll.item()
        if step % args.eval_every == 0 or step == args.steps - 1:
            swd = monitor(step, gen)
            print(f"[{time.time() - t0:6.1f}s] step {step:5d}  nll={nll_ema:.4f}  sliced-W1={swd:.4f}", flush=True)
    best = min(monitor.scores, key=lambda s: s[1])
    print(f"done in {time.time() - t0:.1f}s; best sliced-W1 {best[1]:.4f} at step {best[0]}")


if __name__ == "__main__":
    main()
