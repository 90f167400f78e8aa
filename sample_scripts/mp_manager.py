"""A trainer that shares its episodes with a dashboard process through a
``multiprocessing.Manager`` list.

``--leak``: every finished episode (its observations, ~100 KiB) is appended to
``episodes`` and never dropped, though the dashboard only ever reads
``episodes[-1]``. The list lives in the manager's server process, a child: the
trainer's own memory stays flat while the server's grows. Fixed: trim the list
to the last few episodes (``del episodes[:-4]``), the default here.
"""

import argparse
import multiprocessing as mp
import random
import time

import torch
from torch import nn


def dashboard(episodes, stop) -> None:
    """Shows the newest episode's return now and then (reads the last item only)."""
    while not stop.is_set():
        if len(episodes) > 0:
            latest = episodes[-1]
            _ = latest["return"]
        time.sleep(0.2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--leak", action="store_true")
    args = ap.parse_args()
    torch.manual_seed(0)
    rng = random.Random(0)
    manager = mp.Manager()
    episodes = manager.list()
    stop = manager.Event()
    viewer = mp.Process(target=dashboard, args=(episodes, stop), daemon=True)
    viewer.start()
    policy = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 4))
    opt = torch.optim.SGD(policy.parameters(), lr=1e-2)
    t_end = time.monotonic() + args.seconds
    n = 0
    while time.monotonic() < t_end:
        obs = torch.randn(200, 32)
        loss = policy(obs).logsumexp(dim=1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        # a list of plain floats: ~100 KiB once the server unpickles it
        frames = [rng.random() for _ in range(4000)]
        episodes.append({"return": -float(loss), "frames": frames})
        if not args.leak:
            del episodes[:-4]
        n += 1
        time.sleep(0.02)
    stop.set()
    viewer.join(timeout=2)
    print(f"{n} episodes, {len(episodes)} kept")
    manager.shutdown()


if __name__ == "__main__":
    main()
