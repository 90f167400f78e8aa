# expect: no_leak
# holder:
# pattern: learns the vector field of a damped, driven pendulum with an MLP (torch.optim.Adam; one-step + 8-step rollout loss on freshly simulated RK4 transitions, ~45 ms steps, code in main() + LiveFigure/DynamicsNet/Simulator classes) and keeps a live matplotlib (Agg) figure that is created once and redrawn every 5 steps and saved (overwritten) every 50 steps; it looks like the classic "plotting into a persistent figure" growth, but LiveFigure only ever mutates the artists it created in __init__: set_data on the loss line, on the true/predicted rollout lines and on 4 faded "recent rollout" lines taken round-robin, set_UVC on the quiver, set_data on the error image and set_text on the title text, and the loss history it plots is a list of floats; no artist is ever added after start-up, so memory is flat after the first draw
# step_ms: 45
"""Learning pendulum dynamics with a live phase-portrait figure.

The true system is a damped, periodically driven pendulum

    theta'' = -sin(theta) - c * theta' + A * cos(w_d * t)

with the drive phase folded into the state. An MLP predicts the time
derivative (theta', theta'') from (sin theta, cos theta, theta', drive
phase); it is trained on random short trajectories with a one-step loss
plus an 8-step rollout loss (RK4 through the network). A figure with the
loss curve, a predicted vs true rollout, the learned vector field and the
field-error map is refreshed during training and written to a temp dir.

Main options (defaults):
    --steps 460 --draw-every 5
"""
import argparse
import math
import os
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)

PARAMS = dict(c=0.15, A=0.9, wd=2.0 / 3.0, dt=0.05)


def true_field(state, p=PARAMS):
    """state: (..., 3) = theta, omega, drive phase."""
    th, om, ph = state[..., 0], state[..., 1], state[..., 2]
    return torch.stack([om, -torch.sin(th) - p["c"] * om + p["A"] * torch.cos(ph),
                        torch.full_like(ph, p["wd"])], -1)


def rk4(f, s, dt):
    k1 = f(s)
    k2 = f(s + 0.5 * dt * k1)
    k3 = f(s + 0.5 * dt * k2)
    k4 = f(s + dt * k3)
    return s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


class DynamicsNet(nn.Module):
    def __init__(self, width=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, width), nn.SiLU(), nn.Linear(width, width), nn.SiLU(),
                                 nn.Linear(width, width), nn.SiLU(), nn.Linear(width, 2))

    def forward(self, s):
        th, om, ph = s[..., 0], s[..., 1], s[..., 2]
        feats = torch.stack([torch.sin(th), torch.cos(th), om, torch.cos(ph)], -1)
        d = self.net(feats)
        return torch.stack([om, d[..., 1], torch.full_like(ph, PARAMS["wd"])], -1)


class Simulator:
    def __init__(self, rng):
        self.rng = rng

    def batch(self, n, horizon):
        s0 = torch.from_numpy(np.stack([
            self.rng.uniform(-math.pi, math.pi, n),
            self.rng.uniform(-2.5, 2.5, n),
            self.rng.uniform(0, 2 * math.pi, n)], -1)).float()
        traj = [s0]
        with torch.no_grad():
            for _ in range(horizon):
                traj.append(rk4(true_field, traj[-1], PARAMS["dt"]))
        return torch.stack(traj, 1)


class LiveFigure:
    N_RECENT = 4

    def __init__(self, out_dir, grid=25):
        self.path = os.path.join(out_dir, "live.png")
        self.fig, axes = plt.subplots(2, 2, figsize=(10, 8))
        (self.ax_loss, self.ax_traj), (self.ax_field, self.ax_err) = axes
        self.steps, self.losses = [], []
        (self.loss_line,) = self.ax_loss.plot([], [], lw=1)
        self.ax_loss.set_yscale("log")
        self.ax_loss.set_xlabel("step")
        (self.true_line,) = self.ax_traj.plot([], [], "k-", lw=1.5, label="true")
        (self.pred_line,) = self.ax_traj.plot([], [], "C3--", lw=1.5, label="model")
        self.recent = [self.ax_traj.plot([], [], color="C0", alpha=0.25, lw=1)[0] for _ in range(self.N_RECENT)]
        self.n_drawn = 0
        self.ax_traj.set_xlim(-math.pi, math.pi)
        self.ax_traj.set_ylim(-3.5, 3.5)
        self.ax_traj.legend(loc="upper right")
        th = np.linspace(-math.pi, math.pi, grid)
        om = np.linspace(-3, 3, grid)
        self.TH, self.OM = np.meshgrid(th, om)
        zeros = np.zeros_like(self.TH)
        self.quiver = self.ax_field.quiver(self.TH, self.OM, zeros, zeros, angles="xy")
        self.err_img = self.ax_err.imshow(zeros, origin="lower", extent=(-math.pi, math.pi, -3, 3),
                                          aspect="auto", vmin=0, vmax=1, cmap="magma")
        self.fig.colorbar(self.err_img, ax=self.ax_err)
        self.title = self.fig.suptitle("")

    def log(self, step, loss):
        self.steps.append(step)
        self.losses.append(loss)

    def draw(self, step, model):
        self.loss_line.set_data(self.steps, self.losses)
        self.ax_loss.relim()
        self.ax_loss.autoscale_view()
        grid = torch.from_numpy(np.stack([self.TH, self.OM, np.zeros_like(self.TH)], -1)).float()
        with torch.no_grad():
            pred = model(grid)[..., 1].numpy()
            true = true_field(grid)[..., 1].numpy()
            s_true = s_pred = torch.tensor([[2.0, 0.0, 0.0]])
            tt, pp = [s_true], [s_pred]
            for _ in range(120):
                s_true = rk4(true_field, s_true, PARAMS["dt"])
                s_pred = rk4(model, s_pred, PARAMS["dt"])
                tt.append(s_true)
                pp.append(s_pred)
        tt = torch.cat(tt).numpy()
        pp = torch.cat(pp).numpy()
        self.quiver.set_UVC(self.OM, pred)
        self.err_img.set_data(np.abs(pred - true))
        self.true_line.set_data(np.angle(np.exp(1j * tt[:, 0])), tt[:, 1])
        self.pred_line.set_data(np.angle(np.exp(1j * pp[:, 0])), pp[:, 1])
        self.recent[self.n_drawn % self.N_RECENT].set_data(np.angle(np.exp(1j * pp[:, 0])), pp[:, 1])
        self.n_drawn += 1
        self.title.set_text(f"step {step}   loss {self.losses[-1]:.2e}   "
                            f"field RMSE {np.sqrt(((pred - true) ** 2).mean()):.3f}")

    def save(self):
        self.fig.savefig(self.path, dpi=72)

    def close(self):
        plt.close(self.fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=460)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--rollout", type=int, default=8)
    ap.add_argument("--draw-every", type=int, default=5)
    ap.add_argument("--save-every", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    sim = Simulator(rng)
    model = DynamicsNet()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps, eta_min=1e-4)
    tmp = tempfile.TemporaryDirectory(prefix="pendulum_")
    live = LiveFigure(tmp.name)

    t0 = time.time()
    for step in range(1, args.steps + 1):
        traj = sim.batch(args.batch, args.rollout)
        d_true = true_field(traj[:, 0])
        loss_1 = ((model(traj[:, 0]) - d_true) ** 2).mean()
        s = traj[:, 0]
        loss_r = 0.0
        for k in range(1, args.rollout + 1):
            s = rk4(model, s, PARAMS["dt"])
            loss_r = loss_r + ((s[:, :2] - traj[:, k, :2]) ** 2).mean()
        loss = loss_1 + loss_r / args.rollout
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        live.log(step, loss.item())

        if step % args.draw_every == 0:
            live.draw(step, model)
        if step % args.save_every == 0:
            live.save()
            print(f"step {step:4d}  loss {np.mean(live.losses[-args.save_every:]):.3e}  "
                  f"lr {sched.get_last_lr()[0]:.2e}  {(time.time() - t0) / step * 1e3:.1f} ms/step", flush=True)

    live.close()
    tmp.cleanup()
    print("done")


if __name__ == "__main__":
    main()
