"""A correct small training loop on the GPU when available (CPU otherwise): nothing grows."""

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
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
running = 0.0
for step in range(args.steps):
    x = torch.randn(128, 512, device=device)
    target = torch.randint(0, 10, (128,), device=device)
    loss = nn.functional.cross_entropy(model(x), target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    running = 0.98 * running + 0.02 * loss.item()
    if step % 200 == 0:
        print(f"step {step} loss {running:.3f} on {device}")
