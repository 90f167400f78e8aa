"""A leak held in main()'s locals on a GPU run: each step's loss is kept in a list for a
plot that is never drawn. backward() frees the activations the graph saved, so what
grows is mostly host memory (the graph's nodes) plus one small device block per loss.

Uses CUDA when available, else the CPU (then the leak is in RAM).
"""

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1500)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.Tanh(), nn.Linear(512, 1)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for step in range(args.steps):
        x = torch.randn(64, 256, device=device)
        y = torch.randn(64, 1, device=device)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss)  # BUG: keeps every loss tensor and its graph
        if step % 500 == 0:
            print(f"step {step} loss {loss.item():.4f} on {device}")


if __name__ == "__main__":
    main()
