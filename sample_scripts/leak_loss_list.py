# expect: leak
# holder: __main__.losses
"""A small regression trainer that keeps every loss *tensor* for a progress report.

The classic leak: `losses.append(loss)` keeps each step's autograd graph (and
the activations it saved) alive. Fixed twin: ok_loss_item.py.
"""

import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=1500)
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--batch", type=int, default=64)
args = parser.parse_args()

torch.set_num_threads(1)
torch.manual_seed(0)

model = nn.Sequential(
    nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1)
)
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
loss_fn = nn.MSELoss()
losses = []

for step in range(args.steps):
    x = torch.randn(args.batch, 256)
    y = x[:, :1] * 0.5
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    losses.append(loss)  # BUG: keeps the graph; should be loss.item()
    if step % 250 == 0:
        print(f"step {step} loss {sum(losses[-50:]).item() / min(50, len(losses)):.4f}")

print("final mean loss", float(sum(t.item() for t in losses[-100:]) / 100))
