# expect: leak
# holder: model.losses|losses
# pattern: a LightningModule keeps every training loss tensor in self.losses
"""A tiny regression LightningModule trained with Lightning's Trainer.

``training_step`` appends each loss to ``self.losses`` to plot a curve at the end
of training, keeping every loss *tensor* with its autograd graph. The module is
built inside ``main()``. Fix: ``self.losses.append(loss.item())`` (``--fixed``).
"""

import argparse

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self, fixed):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 1))
        self.fixed = fixed
        self.losses = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x).squeeze(-1), y)
        self.losses.append(loss.item() if self.fixed else loss)  # BUG without --fixed
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--fixed", action="store_true")
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = torch.randn(a.steps * 16, 32)
    y = x[:, :4].sum(-1)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
    model = Regressor(a.fixed)
    trainer = L.Trainer(
        max_steps=a.steps,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
    )
    trainer.fit(model, loader)
    print("global steps:", trainer.global_step)


if __name__ == "__main__":
    main()
