"""Autograd graph shapes the agent's graph walk must survive (issue 11).

``python graph_shapes.py SHAPE SECONDS``: runs SHAPE over and over for SECONDS and
exits 0. Each shape keeps a graph alive across many iterations or tears one down
while the agent may be walking it from its own thread:

- rnn_chain: a 12,000-step RNN chain (~120,000 nodes), dropped and rebuilt
- linear_chain: a 50,000-node chain of multiplies, dropped and rebuilt
- backward_chain: a chain backpropagated through (retain_graph) while it grows
- freed_by_backward: a 20,000-node chain freed by its own backward
- wide: one sum over 64 leaves per iteration, accumulated
- create_graph: double backward with create_graph=True (a grad <-> graph cycle)
"""

import sys
import time

import torch
from torch import nn

torch.set_num_threads(1)


def rnn_chain() -> None:
    rnn = nn.RNN(64, 256)
    h = torch.zeros(1, 16, 256)
    for _ in range(12_000):
        _, h = rnn(torch.rand(1, 16, 64), h)


def linear_chain() -> None:
    w = torch.ones(8, requires_grad=True)
    x = w * 1.0
    for _ in range(50_000):
        x = x * 1.00001


def backward_chain() -> None:
    rnn = nn.RNN(32, 64)
    h = torch.zeros(1, 4, 64)
    for i in range(3_000):
        out, h = rnn(torch.rand(1, 4, 32), h)
        if i % 500 == 499:
            out.sum().backward(retain_graph=True)


def freed_by_backward() -> None:
    w = torch.ones(8, requires_grad=True)
    x = w * 1.0
    for _ in range(20_000):
        x = x * 1.00001
    x.sum().backward()  # type: ignore[no-untyped-call]


def wide() -> None:
    xs = [torch.randn(16, requires_grad=True) for _ in range(64)]
    acc = xs[0] * 0
    for i in range(300):
        acc = acc + torch.stack([x * (i % 7) for x in xs]).sum(0)


def create_graph() -> None:
    w = torch.randn(32, requires_grad=True)
    for i in range(300):
        (g,) = torch.autograd.grad((w**3).sum(), w, create_graph=True)
        # w.grad keeps a graph that reaches w
        (g**2).sum().backward(create_graph=True)  # type: ignore[no-untyped-call]
        if i % 100 == 99:
            w.grad = None


if __name__ == "__main__":
    shape, seconds = sys.argv[1], float(sys.argv[2])
    t0 = time.monotonic()
    runs = 0
    while time.monotonic() - t0 < seconds:
        globals()[shape]()
        runs += 1
    print(f"{shape}: {runs} runs")
