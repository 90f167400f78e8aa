"""Image-patch training with a preprocessing cache.

`load_patch` is memoised with `functools.lru_cache(maxsize=300)`: the cache
fills during the first few hundred steps (memory grows), then evicts - a
bounded cache, not a leak. Must not be flagged.
"""

import argparse
import functools
import random

import torch
import torch.nn.functional as F
from torch import nn

N_IMAGES = 600


@functools.lru_cache(maxsize=300)
def load_patch(index: int) -> torch.Tensor:
    """Pretend decode + augment: deterministic per index, ~48 KB each."""
    g = torch.Generator().manual_seed(index)
    img = torch.rand(3, 64, 64, generator=g)
    return F.avg_pool2d(img.unsqueeze(0), 2).squeeze(0).contiguous()


class PatchClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 12, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4)
        )
        self.classify = nn.Linear(12 * 16, 5)

    def forward(self, x):
        return self.classify(self.features(x).flatten(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1200)
    steps = ap.parse_args().steps
    torch.set_num_threads(1)
    torch.manual_seed(1)
    rnd = random.Random(1)
    # a skewed sampler: a hot set of 300 images is drawn most of the time
    hot = list(range(300))
    model = PatchClassifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(steps):
        idx = [
            rnd.choice(hot) if rnd.random() < 0.97 else rnd.randrange(N_IMAGES) for _ in range(8)
        ]
        x = torch.stack([load_patch(i) for i in idx])
        y = torch.tensor([i % 5 for i in idx])
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 200 == 0:
            info = load_patch.cache_info()
            print(f"step {step} loss {loss.item():.3f} cache {info.currsize}/{info.maxsize}")


if __name__ == "__main__":
    main()
