"""A wide MLP trained with Adam: Adam allocates its two moment buffers lazily,
at the first `optimizer.step()` - a jump of twice the parameter memory, once.
After that memory is flat. Must not be flagged.
"""

import argparse

import torch
from torch import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)

    # ~1.6M parameters: 6.3 MB of weights, +12.6 MB of Adam state at step 1
    model = nn.Sequential(
        nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98))
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

    running = None
    for step in range(args.steps):
        inputs = torch.randn(16, 512)
        labels = inputs[:, :10].argmax(1)
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(model(inputs), labels)
        loss.backward()
        optimizer.step()
        scheduler.step()
        running = loss.item() if running is None else 0.98 * running + 0.02 * loss.item()
        if step % 150 == 0:
            print(f"step {step:4d}  loss(ema) {running:.4f}  lr {scheduler.get_last_lr()[0]:.2e}")


if __name__ == "__main__":
    main()
