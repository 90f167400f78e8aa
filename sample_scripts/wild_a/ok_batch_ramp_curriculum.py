# expect: no_leak
# pattern: curriculum: image size and batch size step up once (after 700 of 920 steps, ~40% of the wall time; ~9 ms then ~50 ms per step), so RSS steps up once and then stays flat; losses kept as floats
# step_ms: 20
"""Small CNN on synthetic texture images with a two-stage curriculum.

Stage 1 trains on 20x20 crops with batch 32; stage 2 switches to full 32x32
images with batch 64 (linear LR scaling).  The larger activations make RSS step
up once at the stage boundary; within each stage every step allocates the same
amount, and only Python floats are stored, so memory is flat after the switch.
"""
import time
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Stage:
    steps: int
    batch_size: int
    image_size: int
    lr: float


@dataclass
class Config:
    stages: list = field(default_factory=lambda: [
        Stage(steps=700, batch_size=32, image_size=20, lr=0.02),
        Stage(steps=220, batch_size=64, image_size=32, lr=0.04),
    ])
    n_classes: int = 8
    seed: int = 0


class TextureNet(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.fc = nn.Linear(32, n_classes)

    def forward(self, x):
        return self.fc(self.body(x))


def textures(batch_size, size, n_classes, g):
    y = torch.randint(0, n_classes, (batch_size,), generator=g)
    coords = torch.arange(size, dtype=torch.float32)
    freq = 0.3 + 0.15 * (y % 4).float()
    theta = (y // 4).float() * (torch.pi / 2) + 0.3 * torch.rand(batch_size, generator=g)
    u = coords.view(1, 1, -1) * torch.cos(theta).view(-1, 1, 1) + coords.view(1, -1, 1) * torch.sin(theta).view(-1, 1, 1)
    img = torch.sin(freq.view(-1, 1, 1) * u) + 0.5 * torch.randn(batch_size, size, size, generator=g)
    return img.unsqueeze(1), y


def main():
    torch.set_num_threads(1)
    cfg = Config()
    torch.manual_seed(cfg.seed)
    g = torch.Generator().manual_seed(cfg.seed)
    model = TextureNet(cfg.n_classes)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.stages[0].lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    losses = []
    t0 = time.time()
    global_step = 0
    for k, stage in enumerate(cfg.stages):
        for group in opt.param_groups:
            group["lr"] = stage.lr
        for step in range(stage.steps):
            x, y = textures(stage.batch_size, stage.image_size, cfg.n_classes, g)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            global_step += 1
            if global_step % 200 == 0:
                print(f"stage {k} step {global_step}  bs {stage.batch_size}  img {stage.image_size}"
                      f"  loss {sum(losses[-200:]) / 200:.4f}  ({time.time() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
