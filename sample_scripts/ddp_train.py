"""Data-parallel training on CPU with gloo, one leak planted on one rank only.

Run under torchrun:

    memprobe run -- torchrun --standalone --nproc-per-node 2 sample_scripts/ddp_train.py

``--leak-rank 1`` (the default) makes rank 1 alone keep every step's loss tensor
(with its autograd graph) and its input batch for a "worst batches" report that
is never trimmed; every other rank is clean. ``--leak-rank -1``
plants no leak. ``--workers N`` feeds each rank from a DataLoader with N worker
processes (each rank's workers appear under that rank).
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset


class Noise(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.randn(512, generator=torch.Generator().manual_seed(i))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--leak-rank", type=int, default=1)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps-per-s", type=float, default=40.0)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DistributedDataParallel(
        nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 1))
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    worst_batches = []
    if args.workers:
        batches = iter(
            DataLoader(
                Noise(args.steps * args.batch),
                batch_size=args.batch,
                num_workers=args.workers,
                multiprocessing_context="fork",
            )
        )
    t0 = time.monotonic()
    for step in range(args.steps):
        x = next(batches) if args.workers else torch.randn(args.batch, 512)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), x[:, :1])
        loss.backward()
        optimizer.step()
        if rank == args.leak_rank:
            worst_batches.append((loss, x))  # BUG on this rank only: never trimmed
        delay = t0 + (step + 1) / args.steps_per_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    dist.barrier()
    print(
        f"rank {rank} (local {os.environ.get('LOCAL_RANK')}): {args.steps} steps, "
        f"kept {len(worst_batches)} batches"
    )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
