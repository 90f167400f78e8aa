# expect: no_leak
# pattern: matplotlib figures created every few steps, plt.close(fig) after savefig (Agg)
# step_ms: 20
"""1-D function regression with a "prediction vs. target" plot rendered every
few steps for a dashboard -- the fixed twin of leak_plot_figures.py: each
figure is closed with ``plt.close(fig)`` right after ``savefig``, so pyplot's
figure manager holds at most one figure at a time.

Memory: flat (a figure's worth of wobble).
"""

import argparse
import io
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402


def target_fn(x):
    return torch.sin(3 * x) + 0.3 * torch.cos(11 * x) + 0.1 * x**2


def render(model, step, xs, ys):
    with torch.no_grad():
        pred = model(xs)
    fig, ax = plt.subplots(figsize=(5, 3), dpi=80)
    try:
        ax.plot(xs.squeeze().numpy(), ys.squeeze().numpy(), "k-", lw=1, label="target")
        ax.plot(xs.squeeze().numpy(), pred.squeeze().numpy(), "r--", lw=1, label="model")
        ax.set_title(f"step {step}")
        ax.legend(loc="upper right")
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        return buf.getvalue()
    finally:
        plt.close(fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--plot-every", type=int, default=5)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(
        nn.Linear(1, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(), nn.Linear(128, 1)
    )
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    xs = torch.linspace(-math.pi, math.pi, 400).unsqueeze(1)
    ys = target_fn(xs)
    latest_png = b""
    for step in range(args.steps):
        x = (torch.rand(256, 1) * 2 - 1) * math.pi
        loss = nn.functional.mse_loss(model(x), target_fn(x))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % args.plot_every == 0:
            latest_png = render(model, step, xs, ys)
        if step % 250 == 0:
            print(
                f"step {step} mse {loss.item():.4f} last png {len(latest_png)} bytes, "
                f"open figs {len(plt.get_fignums())}"
            )


if __name__ == "__main__":
    main()
