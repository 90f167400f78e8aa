"""A DataLoader with worker processes whose Dataset may leak inside the workers.

``--leak``: each worker keeps a "decoded sample cache" that nothing ever trims
(16 KiB per item), so every worker's memory climbs while the main process stays
flat; ``--leak-worker K`` plants it in worker K only, the others stay clean.
Without either the same pipeline is clean. ``--start-method`` picks
fork (Linux default) or spawn (macOS / Windows default, and what CUDA users set).
"""

import argparse
import time
from typing import Optional

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Images(Dataset):
    def __init__(self, n: int, leak_worker: Optional[int]) -> None:
        self.n = n
        self.leak_worker = leak_worker  # -1: every worker; None: no leak
        self.cache = []  # filled inside each worker (each has its own copy)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        x = torch.full((64,), float(i % 7))
        info = get_worker_info()
        if self.leak_worker is not None and info is not None and self.leak_worker in (-1, info.id):
            self.cache.append(bytearray(16 * 1024))  # BUG: grows forever in every worker
        return x, x[:1] * 0.5


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start-method", choices=["fork", "spawn"], default="fork")
    parser.add_argument("--leak", action="store_true", help="leak in every worker")
    parser.add_argument("--leak-worker", type=int, default=None, help="leak in this worker only")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--steps-per-s", type=float, default=40.0)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    total_steps = int(args.seconds * args.steps_per_s)
    leak_worker = -1 if args.leak else args.leak_worker
    data = Images(total_steps * args.batch, leak_worker)
    loader = DataLoader(
        data,
        batch_size=args.batch,
        num_workers=args.workers,
        multiprocessing_context=args.start_method,
    )
    model = nn.Linear(64, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    t0 = None
    for step, (x, y) in enumerate(loader):
        if t0 is None:  # workers are up (spawned ones import torch first)
            t0 = time.monotonic()
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        # paced, so workers produce at a steady rate for the whole run
        delay = t0 + (step + 1) / args.steps_per_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    print(f"done: {step + 1} steps in {time.monotonic() - t0:.1f} s, leak in worker {leak_worker}")


if __name__ == "__main__":
    main()
