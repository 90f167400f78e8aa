# expect: leak
# holder: grad_window|state
# pattern: custom torch.optim.Optimizer keeps a per-parameter sliding window of gradient clones in self.state[p]["grad_window"]; the truncation `window = window[-k:]` only rebinds a local, so the list in the optimizer state keeps one gradient copy per parameter per step
# step_ms: 10
"""Noise-adaptive momentum SGD on a synthetic tabular regression task.

The optimizer damps each parameter's step by an estimate of its gradient
noise-to-signal ratio, computed from a short sliding window of recent
gradients (in the spirit of the gradient-noise-scale literature).
"""
import math
import time

import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(17)

N_STEPS = 1600
BATCH = 256
D_IN = 64
HIDDEN = 128


class NoiseAdaptiveSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=0.05, momentum=0.9, window=8, eps=1e-8):
        if lr <= 0:
            raise ValueError(f"invalid lr {lr}")
        defaults = dict(lr=lr, momentum=momentum, window=window, eps=eps)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["momentum_buffer"] = torch.zeros_like(p)
                    state["grad_window"] = []
                state["step"] += 1

                window = state["grad_window"]
                window.append(p.grad.clone())
                if len(window) > group["window"]:
                    window = window[-group["window"]:]

                if len(window) >= 2:
                    g = torch.stack(window)
                    noise = g.var(dim=0).mean().sqrt()
                    signal = g.mean(dim=0).abs().mean()
                    scale = float(signal / (signal + noise + group["eps"]))
                else:
                    scale = 1.0
                state["scale"] = scale

                buf = state["momentum_buffer"]
                buf.mul_(group["momentum"]).add_(p.grad)
                p.add_(buf, alpha=-group["lr"] * scale)
        return loss


def make_teacher(seed):
    g = torch.Generator().manual_seed(seed)
    w1 = torch.randn(D_IN, 32, generator=g) / math.sqrt(D_IN)
    w2 = torch.randn(32, 1, generator=g) / math.sqrt(32)

    def teacher(x):
        return torch.sin(x @ w1) @ w2 + 0.1 * (x[:, :1] ** 2)

    return teacher


def main():
    teacher = make_teacher(1)
    model = nn.Sequential(
        nn.Linear(D_IN, HIDDEN),
        nn.SiLU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.SiLU(),
        nn.Linear(HIDDEN, 1),
    )
    opt = NoiseAdaptiveSGD(model.parameters(), lr=0.02, momentum=0.9, window=8)
    gen = torch.Generator().manual_seed(2)

    x_val = torch.randn(2048, D_IN, generator=gen)
    y_val = teacher(x_val)

    start = last = time.perf_counter()
    running = 0.0
    for step in range(1, N_STEPS + 1):
        x = torch.randn(BATCH, D_IN, generator=gen)
        y = teacher(x) + 0.05 * torch.randn(BATCH, 1, generator=gen)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running = 0.95 * running + 0.05 * loss.item() if step > 1 else loss.item()

        now = time.perf_counter()
        if now - last >= 1.0:
            with torch.no_grad():
                val = nn.functional.mse_loss(model(x_val), y_val).item()
            scales = [opt.state[p]["scale"] for p in model.parameters()]
            print(
                f"[{now - start:5.1f}s] step {step}/{N_STEPS} train={running:.4f} "
                f"val={val:.4f} mean_scale={sum(scales) / len(scales):.3f}",
                flush=True,
            )
            last = now

    with torch.no_grad():
        val = nn.functional.mse_loss(model(x_val), y_val).item()
    print(f"done: {N_STEPS} steps in {time.perf_counter() - start:.1f}s, val mse {val:.4f}")


if __name__ == "__main__":
    main()
