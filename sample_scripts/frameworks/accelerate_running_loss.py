# expect: leak
# holder: running_loss
# pattern: an accelerate loop sums the loss tensor across steps (running_loss += loss)
"""A small MLP classifier trained with Hugging Face accelerate.

The loop reports the mean loss every 500 steps from ``running_loss += loss``:
the running sum is a tensor built from every step's loss, so it keeps every
step's autograd graph alive. Fix: ``running_loss += loss.item()`` (``--fixed``).
"""

import argparse

import torch
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=4000)
    p.add_argument("--fixed", action="store_true")
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    accelerator = Accelerator(cpu=True)
    x = torch.randn(a.steps * 32, 64)
    y = (x[:, 0] > 0).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    running_loss = 0.0
    step = 0
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb), yb)
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        running_loss += loss.item() if a.fixed else loss  # BUG without --fixed
        step += 1
        if step % 500 == 0:
            print(f"step {step} mean loss {float(running_loss) / step:.4f}", flush=True)
        if step >= a.steps:
            break
    print("global steps:", step)


if __name__ == "__main__":
    main()
