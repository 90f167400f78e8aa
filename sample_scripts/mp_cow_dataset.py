"""Copy-on-access in DataLoader workers (pytorch/pytorch#13246).

The Dataset holds its samples as a big Python list of small Python lists. Forked
workers share those pages with the main process, but merely *reading* an item
writes its reference count, so every page a worker touches becomes a private
copy. Each worker's USS/PSS climbs item after item while its RSS stays flat
(the pages were already mapped at fork): RSS alone never shows it.

The fix a person wants: hold the data in NumPy arrays / Arrow / a memory-mapped
file (no per-item Python objects), e.g. ``np.array(lengths)`` plus one bytes blob.
"""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Captions(Dataset):
    def __init__(self, n: int) -> None:
        # n small Python objects: a list [id, text] per sample (the anti-pattern)
        self.items = [[i, f"caption number {i}"] for i in range(n)]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int):
        item = self.items[i]  # touches the refcounts: the page is copied in this worker
        return len(item[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=3_000_000)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    torch.set_num_threads(1)
    t_build = time.monotonic()
    data = Captions(args.items)
    print(f"dataset: {len(data):,} items built in {time.monotonic() - t_build:.1f} s")
    loader = DataLoader(
        data, batch_size=args.batch, num_workers=args.workers, multiprocessing_context="fork"
    )
    model = nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
    steps = len(loader)
    t0 = None
    for step, lengths in enumerate(loader):
        if t0 is None:  # the workers are up
            t0 = time.monotonic()
        x = lengths.float().unsqueeze(1)
        optimizer.zero_grad()
        model(x).mean().backward()
        optimizer.step()
        # paced: one sweep of the dataset over --seconds, at a steady rate
        delay = t0 + (step + 1) * args.seconds / steps - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    print(f"done: {steps} steps over {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
