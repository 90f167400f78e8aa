"""Not a leak: every step frees everything it allocates, but the working-set size keeps
changing, so the caching allocator keeps reserving new segments (reserved grows while
allocated, at each step's end, stays flat). Measured on an H200: 3,000 steps reserved
2 GB -> 12 GB. (With the frees after ``opt.step()``, as this script had them first, the
step's own inputs were still alive at each step boundary and grew 37 rows a step, which
memprobe rightly reported as a growing tensor.) memprobe must call this
caching/fragmentation, not a leak.

Uses CUDA when available, else falls back to the CPU (then nothing is cached at all).
"""

import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=400)
parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
args = parser.parse_args()

torch.set_num_threads(1)
device = torch.device(args.device)
w = torch.randn(256, 256, device=device, requires_grad=True)
opt = torch.optim.SGD([w], lr=1e-3)

for step in range(args.steps):
    # odd sizes that grow a little every step: freed blocks never fit the next request
    rows = 1024 + 37 * step
    x = torch.randn(rows, 256, device=device)
    keep_a_bit = torch.empty(rows // 3, 97, device=device)
    y = (x @ w).relu().mean() + keep_a_bit.sum() * 0
    opt.zero_grad()
    y.backward()
    del x, keep_a_bit, y  # freed before the step ends: what is allocated between steps is flat
    opt.step()
    if step % 100 == 0:
        print(f"step {step} rows {rows} on {device}")
