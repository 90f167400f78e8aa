"""Trains a few CPU steps, touching only what a CPU script touches (is_available); at exit
reports from inside the target whether CUDA got initialised."""

import atexit
import json
import os
import sys

import torch

torch.set_num_threads(1)
device = "cuda" if torch.cuda.is_available() and os.environ.get("USE_CUDA") else "cpu"
model = torch.nn.Linear(32, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(60):
    loss = model(torch.randn(16, 32, device=device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


@atexit.register
def _report() -> None:
    with open(sys.argv[1], "w") as f:
        json.dump({"cuda_initialized": torch.cuda.is_initialized(), "device": device}, f)  # type: ignore[no-untyped-call]
