"""A CPU training loop of a chosen step size, for the overhead benchmark.

``--size small`` is a ~3 ms step (a 256-512-512-1 MLP, batch 64), ``--size large``
a ~50 ms step (a 768-wide, 3-layer MLP, batch 256), both on one thread. It
prints one JSON line: the wall and CPU seconds its training loop took (imports
excluded; CPU time counts every thread of the process, the agent's too), and
the same for the second half of its steps alone (the steady state).
"""

import argparse
import json
import os
import resource
import time

import torch
from torch import nn

SIZES = {"small": (256, 512, 2, 64), "large": (768, 768, 3, 256)}

ap = argparse.ArgumentParser()
ap.add_argument("--size", choices=sorted(SIZES), default="small")
ap.add_argument("--steps", type=int, default=2000)
args = ap.parse_args()

torch.set_num_threads(1)
torch.manual_seed(0)
d_in, width, depth, batch = SIZES[args.size]
layers = [nn.Linear(d_in, width), nn.ReLU()]
for _ in range(depth - 1):
    layers += [nn.Linear(width, width), nn.ReLU()]
model = nn.Sequential(*layers, nn.Linear(width, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
losses = []
t0, c0, e0 = time.perf_counter(), time.process_time(), time.time()
half = args.steps // 2
for step in range(args.steps):
    if step == half:  # the second half: the steady state, past the agent's start-up censuses
        t_half, c_half = time.perf_counter(), time.process_time()
    x = torch.randn(batch, d_in)
    loss = ((model(x) - x[:, :1]) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
loop_s = time.perf_counter() - t0
cpu_s = time.process_time() - c0  # all threads of this process: the agent's included
e1 = time.time()
usage = resource.getrusage(resource.RUSAGE_SELF)
result = json.dumps(
    {
        "size": args.size,
        "steps": args.steps,
        "loop_s": loop_s,
        "loop_cpu_s": cpu_s,
        "tail_s": loop_s - (t_half - t0),
        "tail_cpu_s": cpu_s - (c_half - c0),
        "step_ms": 1000 * loop_s / args.steps,
        # for benchmarks/bench_peers.py: who printed this, when the loop ran (wall clock,
        # to line up with outside CPU samples), the peak RSS so far, the process CPU so far
        "pid": os.getpid(),
        "loop_t0_epoch": e0,
        "loop_t1_epoch": e1,
        "maxrss_kb": usage.ru_maxrss,
        "proc_cpu_s": usage.ru_utime + usage.ru_stime,
    }
)
print(result)
if os.environ.get("BENCH_RESULT"):  # a file too: stdout may be a terminal the bench cannot parse
    with open(os.environ["BENCH_RESULT"], "a") as f:
        f.write(result + "\n")
