# expect: leak
# holder: ckpt_history|main:ckpt_history
# pattern: in-memory checkpoint list (deepcopy of model + optimizer state_dict every N steps) kept for checkpoint averaging; only the last 5 are ever used but none are evicted
# step_ms: 11
"""Residual MLP regressor with checkpoint averaging at the end of training.

Every `ckpt_every` steps the script deep-copies the model and optimizer state
dicts into `ckpt_history` (an in-memory stand-in for torch.save), and at the end
it averages the last five of them, like NMT-style checkpoint averaging.  Nothing
is ever removed, so each snapshot (~1.7 MB of weights + ~3.3 MB of Adam moments)
stays alive until exit.
Fix: `collections.deque(maxlen=5)` or `del ckpt_history[:-5]` after appending.
"""
import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class ResBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class ResMLP(nn.Module):
    def __init__(self, d_in, d=160, depth=4):
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.blocks = nn.Sequential(*[ResBlock(d) for _ in range(depth)])
        self.out = nn.Linear(d, 1)

    def forward(self, x):
        return self.out(self.blocks(self.inp(x))).squeeze(-1)


def target_fn(x):
    return torch.sin(x[:, 0] * 3) + x[:, 1] * x[:, 2] - 0.5 * x[:, 3:8].pow(2).sum(1)


def average_state_dicts(dicts):
    avg = {}
    for k in dicts[0]:
        avg[k] = sum(d[k].float() for d in dicts) / len(dicts)
    return avg


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    d_in = 32
    model = ResMLP(d_in)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model params: {n_params / 1e3:.0f}K")

    x_val = torch.randn(2048, d_in)
    y_val = target_fn(x_val)

    total_steps = 1600
    ckpt_every = 25
    ckpt_history = []
    t0 = time.time()
    for step in range(1, total_steps + 1):
        x = torch.randn(128, d_in)
        y = target_fn(x) + 0.05 * torch.randn(128)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

        if step % ckpt_every == 0:
            model.eval()
            with torch.no_grad():
                val = F.mse_loss(model(x_val), y_val).item()
            model.train()
            ckpt_history.append({
                "step": step,
                "val_mse": val,
                "model": copy.deepcopy(model.state_dict()),
                "optimizer": copy.deepcopy(opt.state_dict()),
            })
            if step % (ckpt_every * 10) == 0:
                print(f"step {step}  train {loss.item():.4f}  val {val:.4f}"
                      f"  ckpts {len(ckpt_history)}  ({time.time() - t0:.1f}s)", flush=True)

    last = [c["model"] for c in ckpt_history[-5:]]
    model.load_state_dict(average_state_dicts(last))
    with torch.no_grad():
        val = F.mse_loss(model(x_val), y_val).item()
    print(f"averaged last {len(last)} checkpoints: val mse {val:.4f}")


if __name__ == "__main__":
    main()
