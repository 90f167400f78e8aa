"""Time the census' shallow walks from the user's roots, side by side in one process.

A user module holds a model of ``--layers`` linear layers, its Adam optimizer and a
history of ``--history`` small dicts (what a training script's globals look like); each
walk is timed over ``--calls`` calls after one untimed call: the chain search
(``chains.find``, for a few growing type names) and the search for handles on memory
outside Python's objects (``native.handles``). Prints one JSON line of milliseconds a call.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import types
from typing import Any, Callable, Dict

import torch

from memprobe.bootstrap.memprobe_agent import chains, native


def per_call_ms(fn: Callable[[], Any], calls: int) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1000.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=50)
    ap.add_argument("--history", type=int, default=5000)
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args()

    mod: Any = types.ModuleType("walk_user")
    mod.__file__ = "/srv/app/walk_user.py"  # a module of the user's, not a library's
    mod.model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(args.layers)])
    mod.opt = torch.optim.Adam(mod.model.parameters())
    mod.history = [{"step": i, "loss": float(i)} for i in range(args.history)]
    sys.modules[mod.__name__] = mod
    names = {"torch.nn.modules.linear.Linear", "torch.utils.data.dataset.Subset"}
    out: Dict[str, float] = {
        "chains_find_ms": per_call_ms(
            lambda: chains.find(names, time.perf_counter() + 5.0), args.calls
        ),
        "native_handles_ms": per_call_ms(
            lambda: native.handles(time.perf_counter() + 5.0), args.calls
        ),
    }
    print(json.dumps({k: round(v, 2) for k, v in out.items()}))


if __name__ == "__main__":
    main()
