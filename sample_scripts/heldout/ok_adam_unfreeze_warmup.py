# expect: no_leak
# pattern: Adam's lazy state: at step 1, and again when the frozen backbone is unfrozen
# step_ms: 9
"""Fine-tuning recipe: a "pretrained" backbone (random here) is frozen for
the first quarter of training while the head warms up, then unfrozen with a
lower learning rate. Adam + linear warmup, losses logged with ``.item()``.

Memory: Adam allocates ``exp_avg``/``exp_avg_sq`` lazily, on the first step
that a parameter has a gradient. So the head's state appears at step 1 and the
backbone's (2x its 4 MB of weights) only at the unfreeze step. Two steps up,
then flat: not a leak.
"""

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def backbone(d_in, width, depth):
    layers = [nn.Linear(d_in, width), nn.GELU()]
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*layers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--unfreeze-at", type=float, default=0.25)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(5)
    bb = backbone(64, 512, 4)
    head = nn.Linear(512, 10)
    for p in bb.parameters():
        p.requires_grad_(False)
    opt = torch.optim.Adam(
        [{"params": bb.parameters(), "lr": 1e-4}, {"params": head.parameters(), "lr": 1e-3}]
    )
    base_lrs = [g["lr"] for g in opt.param_groups]
    proto = torch.randn(10, 64)

    unfreeze_step = int(args.steps * args.unfreeze_at)
    running = 0.0
    t0 = time.time()
    for step in range(args.steps):
        warm = min(1.0, (step + 1) / 200)
        for g, lr in zip(opt.param_groups, base_lrs):
            g["lr"] = lr * warm
        if step == unfreeze_step:
            print(f"step {step}: unfreezing backbone")
            for p in bb.parameters():
                p.requires_grad_(True)
        y = torch.randint(0, 10, (args.batch,))
        x = proto[y] + 2.0 * torch.randn(args.batch, 64)
        loss = F.cross_entropy(head(bb(x)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running = 0.98 * running + 0.02 * loss.item()
        if step % 400 == 0:
            print(f"step {step:5d} loss {running:.4f} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
