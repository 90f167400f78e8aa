# expect: leak
# holder: main:val_outputs
"""Fine-tune a small tabular classifier, then score a large held-out set.

Training is clean (losses kept with ``.item()``). The scoring phase runs after the
last ``optimizer.step()``: no optimizer, no steps. It forgot ``torch.no_grad()`` and
keeps every batch's logits "to compute the calibration curve at the end", so each
kept tensor holds its batch's whole autograd graph (the activations the forward
saved). Memory climbs for as long as scoring runs, and nothing steps while it does.
Fix: score under ``torch.no_grad()`` (or keep ``logits.detach()``).
"""

import argparse
import time

import torch
from torch import nn


def make_batch(n, dim, gen):
    x = torch.randn(n, dim, generator=gen)
    y = (x[:, :4].sum(1) > 0).long()
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-steps", type=int, default=600)
    ap.add_argument("--score-seconds", type=float, default=9.0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    model = nn.Sequential(
        nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 2)
    )
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(args.train_steps):
        x, y = make_batch(128, 64, gen)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print(f"trained {len(losses)} steps, final loss {sum(losses[-50:]) / 50:.3f}")

    model.eval()
    val_outputs = []
    correct = seen = 0
    t0 = time.time()
    while time.time() - t0 < args.score_seconds:
        x, y = make_batch(256, 64, gen)
        logits = model(x)  # no torch.no_grad(): every batch keeps its graph
        val_outputs.append(logits)
        correct += int((logits.argmax(1) == y).sum())
        seen += len(y)
        time.sleep(0.006)
    probs = torch.cat([o.detach() for o in val_outputs]).softmax(1)
    print(
        f"scored {seen} rows, accuracy {correct / seen:.3f}, mean confidence "
        f"{probs.max(1).values.mean():.3f}"
    )


if __name__ == "__main__":
    main()
