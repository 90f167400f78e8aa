# expect: no_leak
# pattern: multi-task training draws the auxiliary script-type batches with next(aux_iter), aux_iter = itertools.cycle(aux_loader); cycle() saves every batch of its first pass over the small labelled auxiliary set (225 batches, ~30 MB) and afterwards replays the saved batches, so memory climbs during the first ~40% of the run and is flat once the first pass is complete (document-orientation CNN with an auxiliary head, torch.optim.AdamW)
# step_ms: 34
"""Page-orientation classifier for scanned documents, with an auxiliary task.

Main task: predict the rotation (0/90/180/270 degrees) of a 32x32 crop of a
text line.  Main-task crops are rendered on the fly, so there is an unlimited
supply.  Auxiliary task: classify the script family (latin / cjk / arabic) of a
crop; only a small hand-labelled set exists for that, which we simply loop
over while training the main task.  Both heads share the CNN trunk.
"""
import argparse
import itertools
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

SIZE = 32
SCRIPTS = ["latin", "cjk", "arabic"]


def render_lines(rng, n, script=None):
    """Crude text-line renderer: strokes on a baseline, script-dependent texture."""
    img = np.zeros((n, SIZE, SIZE), dtype=np.float32)
    scripts = rng.integers(0, len(SCRIPTS), size=n) if script is None else np.full(n, script)
    for i in range(n):
        s = scripts[i]
        base = rng.integers(18, 24)
        x = 1
        while x < SIZE - 3:
            w = rng.integers(2, 5)
            if s == 0:      # latin: ascenders above the baseline
                h = rng.integers(4, 12)
                img[i, base - h:base, x:x + 1] = 1.0
                img[i, base - 4:base - 3, x:x + w] = 0.8
            elif s == 1:    # cjk: dense boxes
                ww = min(w + 2, SIZE - x)
                img[i, base - 9:base, x:x + ww] = rng.random((9, ww)) > 0.45
                w += 3
            else:           # arabic: connected baseline with dots
                img[i, base - 1:base + 1, x:x + w + 1] = 1.0
                if rng.random() < 0.4:
                    img[i, base - 5, x + 1] = 1.0
            x += w + rng.integers(1, 3)
    img += rng.normal(0, 0.1, size=img.shape).astype(np.float32)
    return img, scripts.astype(np.int64)


def rotated_batch(rng, n):
    img, _ = render_lines(rng, n)
    k = rng.integers(0, 4, size=n)
    out = np.stack([np.rot90(im, kk) for im, kk in zip(img, k)])
    return torch.from_numpy(np.ascontiguousarray(out[:, None])), torch.from_numpy(k.astype(np.int64))


class TwoHeadNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 4 * 4, 128), nn.ReLU(),
        )
        self.orientation = nn.Linear(128, 4)
        self.script = nn.Linear(128, len(SCRIPTS))

    def forward(self, x):
        h = self.trunk(x)
        return self.orientation(h), self.script(h)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=560)
    ap.add_argument("--batch", type=int, default=48)
    ap.add_argument("--aux-batch", type=int, default=32)
    ap.add_argument("--aux-size", type=int, default=7200)
    ap.add_argument("--aux-weight", type=float, default=0.3)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--log-every", type=int, default=140)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    aux_x, aux_y = render_lines(np.random.default_rng(args.seed + 1), args.aux_size)
    aux_set = TensorDataset(torch.from_numpy(aux_x[:, None]), torch.from_numpy(aux_y))
    aux_loader = DataLoader(aux_set, batch_size=args.aux_batch, shuffle=True, drop_last=True)
    aux_iter = itertools.cycle(aux_loader)
    print(f"aux set: {len(aux_set)} crops, {len(aux_loader)} batches per pass")

    model = TwoHeadNet()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)

    t0 = time.time()
    acc_o = acc_s = 0.0
    for step in range(1, args.steps + 1):
        x, y = rotated_batch(rng, args.batch)
        xa, ya = next(aux_iter)
        orient_logits, _ = model(x)
        _, script_logits = model(xa)
        loss = F.cross_entropy(orient_logits, y) + args.aux_weight * F.cross_entropy(script_logits, ya)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()

        acc_o = 0.95 * acc_o + 0.05 * (orient_logits.argmax(1) == y).float().mean().item()
        acc_s = 0.95 * acc_s + 0.05 * (script_logits.argmax(1) == ya).float().mean().item()
        if step % args.log_every == 0:
            print(
                f"step {step}/{args.steps}  loss={loss.item():.3f}  orientation acc={acc_o:.3f}  "
                f"script acc={acc_s:.3f}  ({time.time() - t0:.1f}s)"
            )
    print("done")


if __name__ == "__main__":
    main()
