# expect: leak
# holder: grad_hists
# pattern: a trainer keeps each parameter's gradient histogram at every step, one list
#   per parameter name in a defaultdict on it: six lists grow side by side, one leak
# step_ms: 3
"""A small MLP regression trainer that records per-layer gradient histograms.

The trainer object keeps ``self.grad_hists[name]`` for each parameter, appending a
64-bin histogram tensor after every backward pass so that they can be plotted once
training is over. Nothing ever trims those lists. Fix: write the histograms to a
TensorBoard writer (or keep the last N in a ``deque(maxlen=N)``).
"""

import argparse
from collections import defaultdict

import torch
from torch import nn


class Trainer:
    def __init__(self, model: nn.Module, lr: float) -> None:
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        self.grad_hists = defaultdict(list)

    def _record_grads(self) -> None:
        for name, p in self.model.named_parameters():
            if p.grad is not None:
                self.grad_hists[name].append(torch.histc(p.grad.detach(), bins=64))

    def step(self, x: torch.Tensor, y: torch.Tensor) -> float:
        self.opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        self._record_grads()
        self.opt.step()
        return loss.item()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1500)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1)
    )
    trainer = Trainer(model, lr=1e-2)
    w = torch.randn(16, 1)
    for step in range(args.steps):
        x = torch.randn(64, 16)
        loss = trainer.step(x, x @ w + 0.1 * torch.randn(64, 1))
        if step % 500 == 0:
            print(f"step {step} loss {loss:.4f}")
    print(f"recorded {sum(len(v) for v in trainer.grad_hists.values())} histograms")


if __name__ == "__main__":
    main()
