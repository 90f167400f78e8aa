"""A training loop whose bookkeeping objects form reference cycles: each
step builds a small "trace" tree whose nodes point to their parent and their
children. The cycles become garbage when the step ends and the cyclic
collector reclaims them. Must not be flagged.
"""

import argparse

import torch
from torch import nn


class TraceNode:
    def __init__(self, name, parent=None):
        self.name = name
        self.parent = parent  # child -> parent ...
        self.children = []  # ... and parent -> child: a cycle
        self.payload = {"name": name, "values": [0.0] * 16}
        if parent is not None:
            parent.children.append(self)


def traced_step(model, opt, x, y, step):
    root = TraceNode(f"step{step}")
    fwd = TraceNode("forward", root)
    for i, layer in enumerate(model):
        TraceNode(f"layer{i}:{type(layer).__name__}", fwd)
    loss = nn.functional.mse_loss(model(x), y)
    bwd = TraceNode("backward", root)
    opt.zero_grad()
    loss.backward()
    for name, p in model.named_parameters():
        n = TraceNode(name, bwd)
        n.payload["values"] = p.grad.flatten()[:16].tolist()
    opt.step()
    return loss.item(), root  # the caller drops root: the tree becomes cyclic garbage


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(6)
    model = nn.Sequential(
        nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    w = torch.randn(20, 3)
    for step in range(args.steps):
        x = torch.randn(32, 20)
        loss, _trace = traced_step(model, opt, x, torch.tanh(x @ w), step)
        if step % 500 == 0:
            print(f"step {step} loss {loss:.4f}")


if __name__ == "__main__":
    main()
