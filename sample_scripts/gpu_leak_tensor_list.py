"""Keeps a device tensor per step in a "debug" list: a leak that lives on the GPU.

Uses CUDA when available, else falls back to the CPU (then the leak is in RAM).
"""

import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=800)
parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
args = parser.parse_args()

torch.set_num_threads(1)
torch.manual_seed(0)
device = torch.device(args.device)

net = nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 10)).to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
debug_activations = []

for step in range(args.steps):
    x = torch.randn(128, 512, device=device)
    target = torch.randint(0, 10, (128,), device=device)
    hidden = net[1](net[0](x))
    logits = net[2](hidden)
    loss = nn.functional.cross_entropy(logits, target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    debug_activations.append(hidden.detach())  # BUG: 512 KiB per step, never dropped
    if step % 200 == 0:
        print(f"step {step} loss {loss.item():.3f} on {device}")
