"""In-process on a GPU: ``memprobe.track()`` around a loop that keeps each step's device
loss with its graph. Prints the verdict, the CUDA series seen and the lead culprit.

    python benchmarks/gpu_track.py [STEPS [OUT.json]]
"""

from __future__ import annotations

import sys

import torch
from torch import nn

import memprobe


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Sequential(nn.Linear(256, 512), nn.Tanh(), nn.Linear(512, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    kept = []
    with memprobe.track() as run:
        for _ in range(steps):
            loss = model(torch.randn(64, 256, device=device)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            kept.append(loss)
    print("device", device, "verdict", run.verdict)
    print(run.summary())
    out = sys.argv[2] if len(sys.argv) > 2 else "track.json"
    run.save(out)
    record = run.record.to_json() if run.record is not None else {}
    cuda = sorted(s for p in record.get("processes", []) for s in p["series"] if "cuda" in s)
    print("cuda series", cuda, "limits", record.get("limits"), "saved", out)


if __name__ == "__main__":
    main()
