# expect: leak
# holder: metrics_log
"""A trainer that logs per-step metrics into a list on itself - about 1 KB a
step. Invisible in RSS for a long time (pages, allocator slack); it is found
through the Python heap and the container's length. Fix: aggregate per epoch,
or write the records out and keep a bounded `deque(maxlen=...)`.
"""

import argparse
import time

import torch
from torch import nn


class Trainer:
    def __init__(self, model: nn.Module, lr: float) -> None:
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=lr)
        self.metrics_log = []
        self.global_step = 0

    def train_step(self, x: torch.Tensor, y: torch.Tensor) -> float:
        out = self.model(x)
        loss = nn.functional.mse_loss(out, y)
        self.opt.zero_grad()
        loss.backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), 5.0))
        self.opt.step()
        self.global_step += 1
        value = loss.item()
        self.metrics_log.append(
            {
                "step": self.global_step,
                "loss": value,
                "grad_norm": grad_norm,
                "lr": self.opt.param_groups[0]["lr"],
                "wall": time.time(),
                "tag": f"train/step-{self.global_step:07d}",
                "shape": tuple(x.shape),
            }
        )
        return value


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=4000)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    trainer = Trainer(model, lr=0.05)
    w = torch.randn(8, 1)
    for i in range(args.steps):
        x = torch.randn(16, 8)
        loss = trainer.train_step(x, x @ w)
        if i % 1000 == 0:
            print(f"step {i} loss {loss:.4f} log entries {len(trainer.metrics_log)}")


if __name__ == "__main__":
    main()
