# expect: no_leak
# pattern: training loop with a GradientMonitor that registers forward hooks (last activation per layer, overwritten every step) and param grad hooks once at start; per-step grad norms and flattened snapshots of the classifier gradient go into collections.deque(maxlen=...) windows, so memory ramps for the first ~200 steps and then stays flat; middle block uses torch.utils.checkpoint (Adam)
# step_ms: 28
"""Gradient-health monitor for a residual MLP on synthetic data.

The monitor tracks, per layer, the gradient norm and the RMS of the
layer's output, and estimates the gradient noise scale of the classifier
layer from a sliding window of recent gradient snapshots
(B_noise ~ tr(Sigma) / |G|^2, McCandlish et al. 2018).  Steps whose total
grad norm exceeds 5x the running median are recorded as spikes.

The residual blocks are wrapped in activation checkpointing to show that
the hooks still see the recomputed activations.
"""
import statistics
import time
from collections import deque

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

torch.set_num_threads(1)
torch.manual_seed(0)

D_IN, D_HID, N_CLS = 64, 256, 128
BATCH = 128
STEPS = 750


class ResBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class ResMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(D_IN, D_HID)
        self.blocks = nn.ModuleList([ResBlock(D_HID) for _ in range(3)])
        self.cls = nn.Linear(D_HID, N_CLS)

    def forward(self, x):
        h = self.stem(x)
        for blk in self.blocks:
            h = checkpoint(blk, h, use_reentrant=False)
        return self.cls(h)


class GradientMonitor:
    def __init__(self, model, window=200, snapshot_layer="cls"):
        self.norm_history = deque(maxlen=window)
        self.grad_snapshots = deque(maxlen=window)
        self.spikes = deque(maxlen=50)
        self.last_act = {}
        self._current = {}
        self._handles = []
        self.snapshot_layer = snapshot_layer
        for name, mod in model.named_modules():
            if isinstance(mod, nn.Linear):
                self._handles.append(mod.register_forward_hook(self._make_act_hook(name)))
        for name, p in model.named_parameters():
            if name.endswith("weight"):
                self._handles.append(p.register_hook(self._make_grad_hook(name)))

    def _make_act_hook(self, name):
        def hook(mod, inp, out):
            self.last_act[name] = out.detach()
        return hook

    def _make_grad_hook(self, name):
        def hook(grad):
            self._current[name] = grad.norm().item()
            if name.startswith(self.snapshot_layer + "."):
                self.grad_snapshots.append(grad.detach().flatten().clone())
        return hook

    def end_step(self, step):
        total = sum(v * v for v in self._current.values()) ** 0.5
        if len(self.norm_history) > 50:
            med = statistics.median(h["total"] for h in self.norm_history)
            if total > 5 * med:
                self.spikes.append((step, total))
        self.norm_history.append({"total": total, **self._current})
        self._current = {}

    def noise_scale(self):
        if len(self.grad_snapshots) < 20:
            return float("nan")
        g = torch.stack(list(self.grad_snapshots))
        mean = g.mean(0)
        tr_sigma = g.var(0).sum() * BATCH
        return (tr_sigma / mean.pow(2).sum().clamp_min(1e-12)).item()

    def act_rms(self):
        return {k: v.pow(2).mean().sqrt().item() for k, v in self.last_act.items()}

    def close(self):
        for h in self._handles:
            h.remove()


def make_task():
    w = torch.randn(D_IN, N_CLS)

    def sample(n):
        x = torch.randn(n, D_IN)
        y = (x @ w + 0.8 * torch.randn(n, N_CLS)).argmax(1)
        return x, y
    return sample


def main():
    sample = make_task()
    model = ResMLP()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    monitor = GradientMonitor(model)
    t0 = time.time()
    for step in range(STEPS):
        x, y = sample(BATCH)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        monitor.end_step(step)
        if step % 50 == 0 or step == STEPS - 1:
            rms = monitor.act_rms()
            print(f"step {step:5d}  loss {loss.item():.3f}  |g| {monitor.norm_history[-1]['total']:.3f}  "
                  f"B_noise {monitor.noise_scale():9.1f}  rms(cls) {rms['cls']:.2f}  spikes {len(monitor.spikes)}  "
                  f"({time.time() - t0:.1f}s)", flush=True)
    monitor.close()


if __name__ == "__main__":
    main()
