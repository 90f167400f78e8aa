# expect: leak
# holder: monitor.history|self.history
# pattern: physics-informed net for the viscous Burgers equation (tanh MLP, torch.optim.Adam, ~120 ms steps with 30k fresh collocation points and second derivatives via autograd.grad, code in main() + a ResidualMonitor class); every step ResidualMonitor.record() does self.history = np.append(self.history, np.column_stack([x, t, u, u_x, u_t, u_xx, r, w]), axis=0) so the end-of-run residual heat map can be drawn; history started as np.empty((0, 8)) (float64), nothing ever trims it, so the array grows by ~2 MB per step (np.append copies it every time) for the whole run
# step_ms: 120
"""PINN for the 1-D viscous Burgers equation.

    u_t + u u_x = nu u_xx,   x in [-1, 1], t in [0, 1]
    u(0, x) = -sin(pi x),    u(t, -1) = u(t, 1) = 0

Fresh random collocation points every step plus residual-based adaptive
refinement (RAR): the worst points of each step are kept in a small pool and
re-used.  At the end a residual map over (x, t) is saved as a PNG.
"""
import math
import os
import tempfile
import time

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)

NU = 0.01 / math.pi
N_F = 30000
N_B = 512
N_RAR = 2000
STEPS = 125


class PINN(nn.Module):
    def __init__(self, width=32, depth=4):
        super().__init__()
        layers, d = [], 2
        for _ in range(depth):
            layers += [nn.Linear(d, width), nn.Tanh()]
            d = width
        layers.append(nn.Linear(d, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x, t):
        return self.net(torch.cat([x, t], dim=1))


def residual(model, x, t):
    x.requires_grad_(True)
    t.requires_grad_(True)
    u = model(x, t)
    ones = torch.ones_like(u)
    u_x, u_t = torch.autograd.grad(u, (x, t), ones, create_graph=True)
    u_xx = torch.autograd.grad(u_x, x, torch.ones_like(u_x), create_graph=True)[0]
    r = u_t + u * u_x - NU * u_xx
    return r, u, u_x, u_t, u_xx


class ResidualMonitor:
    """Collects point-wise diagnostics for the final residual map."""

    def __init__(self):
        self.history = np.empty((0, 8))
        self.worst = []

    def record(self, x, t, u, u_x, u_t, u_xx, r, w):
        cols = [a.detach().numpy().ravel() for a in (x, t, u, u_x, u_t, u_xx, r, w)]
        self.history = np.append(self.history, np.column_stack(cols), axis=0)
        self.worst.append(float(r.detach().abs().max()))

    def plot(self, path):
        h = self.history[-200000:]
        fig, ax = plt.subplots(figsize=(6, 4))
        sc = ax.scatter(h[:, 0], h[:, 1], c=np.log10(np.abs(h[:, 6]) + 1e-8), s=1, cmap="magma")
        fig.colorbar(sc, ax=ax, label="log10 |r|")
        ax.set_xlabel("x")
        ax.set_ylabel("t")
        fig.savefig(path, dpi=80)
        plt.close(fig)


def sample_collocation(gen):
    x = torch.rand(N_F, 1, generator=gen) * 2 - 1
    t = torch.rand(N_F, 1, generator=gen)
    return x, t


def boundary_batch(gen):
    x0 = torch.rand(N_B, 1, generator=gen) * 2 - 1
    t0 = torch.zeros(N_B, 1)
    u0 = -torch.sin(math.pi * x0)
    tb = torch.rand(N_B, 1, generator=gen)
    xb = torch.where(torch.rand(N_B, 1, generator=gen) < 0.5, -1.0, 1.0)
    return x0, t0, u0, xb, tb


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model = PINN()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.995)
    monitor = ResidualMonitor()
    rar_x = torch.empty(0, 1)
    rar_t = torch.empty(0, 1)

    t_start = time.time()
    for step in range(1, STEPS + 1):
        x, t = sample_collocation(gen)
        if len(rar_x):
            x = torch.cat([x, rar_x])
            t = torch.cat([t, rar_t])
        r, u, u_x, u_t, u_xx = residual(model, x, t)
        # RAR points get a larger weight in the PDE loss
        w = torch.ones_like(r)
        w[N_F:] = 2.0
        loss_f = (w * r ** 2).mean()

        x0, t0, u0, xb, tb = boundary_batch(gen)
        loss_ic = ((model(x0, t0) - u0) ** 2).mean()
        loss_bc = (model(xb, tb) ** 2).mean()
        loss = loss_f + 10.0 * (loss_ic + loss_bc)

        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()

        monitor.record(x, t, u, u_x, u_t, u_xx, r, w)
        with torch.no_grad():
            worst = torch.topk(r.detach().abs().ravel(), 200).indices
            rar_x = torch.cat([rar_x, x.detach()[worst]])[-N_RAR:]
            rar_t = torch.cat([rar_t, t.detach()[worst]])[-N_RAR:]

        if step % 10 == 0 or step == 1:
            el = time.time() - t_start
            print(f"step {step:4d}  loss {loss.item():.4e}  (pde {loss_f.item():.3e}, "
                  f"ic {loss_ic.item():.3e}, bc {loss_bc.item():.3e})  max|r| {monitor.worst[-1]:.3f}  "
                  f"{el / step * 1000:.0f} ms/step")

    out = os.path.join(tempfile.gettempdir(), "burgers_residual_map.png")
    monitor.plot(out)
    print(f"trained {STEPS} steps in {time.time() - t_start:.1f}s, residual map -> {out}")
    os.remove(out)


if __name__ == "__main__":
    main()
