# expect: leak
# holder: SNAPSHOTS
"""Training with "snapshot ensembling": a copy of the model is kept every few
steps, to average their predictions at the end.

The snapshots go into a module-level registry that is never pruned, so a full
copy of the model (parameters, buffers, optimizer-free) stays alive per
snapshot. Fix: keep the last K (`deque(maxlen=K)`), or store
`{k: v.clone() for k, v in model.state_dict().items()}` on disk.
"""

import argparse
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

SNAPSHOTS = {}  # step -> model copy


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 7 * 7, 128)
        self.out = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.out(F.relu(self.fc(x.flatten(1))))


def synthetic_digits(n, gen):
    labels = torch.randint(0, 10, (n,), generator=gen)
    imgs = torch.randn(n, 1, 28, 28, generator=gen) * 0.2
    for i, lab in enumerate(labels.tolist()):
        imgs[i, 0, 2 * lab : 2 * lab + 6, 4:24] += 1.0
    return imgs, labels


def take_snapshot(model, step):
    SNAPSHOTS[step] = copy.deepcopy(model).eval()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=250)
    ap.add_argument("--every", type=int, default=4)
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(11)
    g = torch.Generator().manual_seed(11)
    net = ConvNet()
    opt = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9, nesterov=True)
    for step in range(a.steps):
        x, y = synthetic_digits(32, g)
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % a.every == 0:
            take_snapshot(net, step)
        if step % 100 == 0:
            print(f"{step=} loss={loss.item():.3f} snapshots={len(SNAPSHOTS)}")
    with torch.no_grad():
        x, y = synthetic_digits(256, g)
        recent = list(SNAPSHOTS.values())[-5:]
        avg = torch.stack([m(x).softmax(-1) for m in recent]).mean(0)
        print("ensemble accuracy", (avg.argmax(-1) == y).float().mean().item())
