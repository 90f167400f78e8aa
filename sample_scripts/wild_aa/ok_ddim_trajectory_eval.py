# expect: no_leak
# pattern: DDPM training of an MLP denoiser on synthetic 16x16 glyph images (epsilon prediction, cosine schedule, torch.optim.AdamW, ~12 ms steps, 16 s budget, code in main() + a Diffusion class and a module-level sample_ddim() function) interleaved every 120 steps with a DDIM evaluation sweep under torch.inference_mode over (steps, eta) settings of increasing cost: each sample_ddim() call keeps the whole reverse trajectory (x_t and predicted x0 for 1024 samples at every step, ~22/43/86 MB for the 10/20/40-step settings) in two function-local preallocated tensors to score path straightness and x0 drift, then returns only floats, and the samples are copied into a preallocated fixed-size ring (SampleBank) for a coverage metric; memory therefore jumps by tens of MB during each sweep and falls back when the locals die - a repeating sawtooth over a flat baseline, nothing accumulates
# step_ms: 12
"""DDPM on tiny synthetic glyphs, with periodic DDIM sampling diagnostics.

Every sweep samples with several step counts / eta values and reports
how straight the reverse trajectories are and how much the predicted
clean image drifts, which is what we use to pick the deployment sampler.
"""
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

IMG = 16
DIM = IMG * IMG
T = 400
BATCH = 128
RUN_SECONDS = 16.0
EVAL_EVERY = 120
EVAL_N = 1024
SETTINGS = [(10, 0.0), (20, 0.0), (40, 0.0), (20, 1.0)]


def make_glyphs(n, rng):
    yy, xx = np.mgrid[0:IMG, 0:IMG].astype(np.float32)
    out = np.zeros((n, IMG, IMG), dtype=np.float32)
    for i in range(n):
        kind = rng.integers(4)
        cx, cy = rng.uniform(4, 12, 2)
        r = rng.uniform(2.5, 5.0)
        if kind == 0:
            img = (np.hypot(xx - cx, yy - cy) < r).astype(np.float32)
        elif kind == 1:
            img = ((np.abs(xx - cx) < r) & (np.abs(yy - cy) < r)).astype(np.float32)
        elif kind == 2:
            img = ((np.abs(xx - cx) < 1.2) | (np.abs(yy - cy) < 1.2)).astype(np.float32)
        else:
            img = (np.abs(np.hypot(xx - cx, yy - cy) - r) < 1.0).astype(np.float32)
        out[i] = img
    return torch.from_numpy(out.reshape(n, DIM) * 2 - 1)


def timestep_embedding(t, dim=128):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half) / half)
    ang = t.float()[:, None] * freqs[None]
    return torch.cat([ang.sin(), ang.cos()], dim=1)


class Denoiser(nn.Module):
    def __init__(self, width=512):
        super().__init__()
        self.t_mlp = nn.Sequential(nn.Linear(128, width), nn.SiLU())
        self.inp = nn.Linear(DIM, width)
        self.mid = nn.Sequential(nn.SiLU(), nn.Linear(width, width), nn.SiLU(), nn.Linear(width, width), nn.SiLU())
        self.out = nn.Linear(width, DIM)

    def forward(self, x, t):
        h = self.inp(x) + self.t_mlp(timestep_embedding(t))
        return self.out(self.mid(h))


class Diffusion:
    def __init__(self):
        s = 0.008
        steps = torch.arange(T + 1, dtype=torch.float64) / T
        f = torch.cos((steps + s) / (1 + s) * math.pi / 2) ** 2
        self.abar = (f / f[0]).clamp(1e-5, 1.0).float()

    def q_sample(self, x0, t, noise):
        a = self.abar[t][:, None]
        return a.sqrt() * x0 + (1 - a).sqrt() * noise


class SampleBank:
    """Fixed-size ring of recent samples for a nearest-training-image coverage metric."""

    def __init__(self, capacity=2048):
        self.buf = torch.empty(capacity, DIM)
        self.n = 0
        self.ptr = 0

    def add(self, x):
        idx = (self.ptr + torch.arange(x.shape[0])) % self.buf.shape[0]
        self.buf[idx] = x
        self.ptr = int((self.ptr + x.shape[0]) % self.buf.shape[0])
        self.n = min(self.buf.shape[0], self.n + x.shape[0])

    def coverage(self, train_x):
        """Mean distance from a training image to its nearest recent sample (lower = better)."""
        if self.n == 0:
            return float("nan")
        d = torch.cdist(train_x[:1024], self.buf[: self.n])
        return float(d.min(1).values.mean() / math.sqrt(DIM))


@torch.inference_mode()
def sample_ddim(model, diff, n, n_steps, eta, gen):
    ts = torch.linspace(T, 1, n_steps).round().long().tolist() + [0]
    x = torch.randn(n, DIM, generator=gen)
    traj = torch.empty(n_steps + 1, n, DIM)
    x0s = torch.empty(n_steps, n, DIM)
    traj[0] = x
    for i, (t, t_prev) in enumerate(zip(ts[:-1], ts[1:])):
        a, a_prev = diff.abar[t], diff.abar[t_prev]
        eps = model(x, torch.full((n,), t))
        x0 = ((x - (1 - a).sqrt() * eps) / a.sqrt()).clamp(-1, 1)
        sigma = eta * ((1 - a_prev) / (1 - a) * (1 - a / a_prev)).clamp(min=0).sqrt()
        dir_xt = (1 - a_prev - sigma ** 2).clamp(min=0).sqrt() * eps
        x = a_prev.sqrt() * x0 + dir_xt + sigma * torch.randn(n, DIM, generator=gen)
        traj[i + 1] = x
        x0s[i] = x0
    seg = (traj[1:] - traj[:-1]).norm(dim=-1).sum(0)
    chord = (traj[-1] - traj[0]).norm(dim=-1)
    straightness = float((chord / seg).mean())
    drift = float((x0s[1:] - x0s[:-1]).abs().mean())
    return x, straightness, drift


def main():
    rng = np.random.default_rng(9)
    torch.manual_seed(9)
    train_x = make_glyphs(6000, rng)
    diff = Diffusion()
    model = Denoiser()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.0)
    bank = SampleBank()
    gen = torch.Generator().manual_seed(0)
    t0 = time.perf_counter()
    step = 0
    sweep = 0
    losses = []
    while time.perf_counter() - t0 < RUN_SECONDS:
        step += 1
        idx = torch.randint(0, train_x.shape[0], (BATCH,))
        x0 = train_x[idx]
        t = torch.randint(1, T + 1, (BATCH,))
        noise = torch.randn_like(x0)
        loss = F.mse_loss(model(diff.q_sample(x0, t, noise), t), noise)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % EVAL_EVERY == 0:
            model.eval()
            n_steps, eta = SETTINGS[sweep % len(SETTINGS)]
            samples, straight, drift = sample_ddim(model, diff, EVAL_N, n_steps, eta, gen)
            bank.add(samples)
            model.train()
            sweep += 1
            print(f"step {step:5d}  loss {np.mean(losses[-100:]):.4f}  ddim({n_steps:2d}, eta={eta})  "
                  f"straightness {straight:.3f}  x0 drift {drift:.4f}  nn-dist {bank.coverage(train_x):.3f}")
    print(f"done: {step} steps, {sweep} sampling sweeps")


if __name__ == "__main__":
    main()
