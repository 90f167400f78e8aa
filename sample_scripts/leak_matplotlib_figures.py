# expect: leak
# holder: pyplot|Gcf|figures
"""A training loop that renders a diagnostic plot every few steps for a
dashboard (PNG bytes sent nowhere in this sample).

`plt.subplots()` registers each figure with pyplot's figure manager; the code
never calls `plt.close(fig)`, so every figure stays alive.
Fix: `plt.close(fig)` after `savefig` (or use `matplotlib.figure.Figure`
directly, which pyplot does not track).
"""

import argparse
import io
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

# pyplot warns once past 20 open figures; this dashboard code silenced it.
warnings.filterwarnings("ignore", message="More than 20 figures")


def render_weights(layer, step):
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(6, 2.5))
    w = layer.weight.detach()
    ax1.imshow(w.numpy(), aspect="auto", cmap="coolwarm")
    ax1.set_title(f"weights @ {step}")
    ax2.hist(w.flatten().numpy(), bins=40)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=50)
    return buf.getvalue()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=250)
    parser.add_argument("--plot-every", type=int, default=5)
    opts = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(2)
    layer = torch.nn.Linear(48, 32)
    opt = torch.optim.SGD(layer.parameters(), lr=0.01)
    target = torch.randn(32, 48)
    sent = 0
    for step in range(opts.steps):
        x = torch.randn(64, 48)
        loss = ((layer(x) - x @ target.T) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % opts.plot_every == 0:
            sent += len(render_weights(layer, step))
        if step % 100 == 0:
            print(f"step {step} loss {loss.item():.3f} dashboard bytes {sent}")


if __name__ == "__main__":
    main()
