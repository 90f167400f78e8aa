# expect: leak
# holder: Gcf|figs|pyplot|_pylab_helpers
# pattern: matplotlib figures created with plt.subplots() every few steps and never closed (Agg)
# step_ms: 20
"""1-D function regression (a wiggly target) with a live "prediction vs.
target" plot saved every few steps, e.g. for a dashboard.

``plot_predictions()`` calls ``plt.subplots()``, draws, and ``savefig()``\\s
into a buffer -- but never ``plt.close(fig)``. pyplot keeps every figure it
created in its figure manager until it is closed, so one full figure (artists,
Agg canvas) piles up every ``--plot-every`` steps. matplotlib even warns
after 20 open figures; the warning scrolls by in the log.

Fix: ``plt.close(fig)`` after ``savefig`` (or use ``matplotlib.figure.Figure``
directly, without pyplot).
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


def plot_predictions(model, step, xs, ys):
    with torch.no_grad():
        pred = model(xs)
    fig, ax = plt.subplots(figsize=(5, 3), dpi=80)
    ax.plot(xs.squeeze().numpy(), ys.squeeze().numpy(), "k-", lw=1, label="target")
    ax.plot(xs.squeeze().numpy(), pred.squeeze().numpy(), "r--", lw=1, label="model")
    ax.set_title(f"step {step}")
    ax.legend(loc="upper right")
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--plot-every", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    model = nn.Sequential(
        nn.Linear(1, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(), nn.Linear(128, 1)
    )
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    xs = torch.linspace(-math.pi, math.pi, 400).unsqueeze(1)
    ys = target_fn(xs)

    dashboard_bytes = 0
    for step in range(args.steps):
        x = (torch.rand(256, 1) * 2 - 1) * math.pi
        loss = nn.functional.mse_loss(model(x), target_fn(x))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % args.plot_every == 0:
            png = plot_predictions(model, step, xs, ys)
            dashboard_bytes += len(png)
        if step % 250 == 0:
            print(f"step {step} mse {loss.item():.4f} dashboard {dashboard_bytes / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
