# expect: leak
# holder: main:hidden
"""Feeding an RNN its own hidden state, never detached (pytorch/pytorch#2198).

A stream is pushed through a vanilla RNN one chunk at a time and the hidden
state is handed to the next call, so each call's autograd graph hangs off the
previous one: after 9,000 chunks the graph behind `hidden` has ~90,000 nodes
and every chunk's activations are still saved for a backward that never comes.
There is no optimizer and no backward: the loop only runs forward.

Fix: `hidden = hidden.detach()` (or `torch.no_grad()` when no backward is meant).
"""

import argparse

import torch
from torch import nn


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=9000)
    args = p.parse_args()
    torch.manual_seed(0)
    rnn = nn.RNN(64, 256)
    hidden = torch.zeros(1, 16, 256)
    for i in range(args.steps):
        data = torch.rand(1, 16, 64)
        out, hidden = rnn(data, hidden)  # BUG: hidden carries every earlier chunk's graph
        if i % 1000 == 0:
            print(f"chunk {i} mean {out.mean().item():.4f}", flush=True)
    print("done")


if __name__ == "__main__":
    main()
