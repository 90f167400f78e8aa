# expect: no_leak
# pattern: per-step StepRecord objects form reference cycles (record <-> tracker, bound-method callbacks) holding ~256 KB numpy snapshots; only the cyclic GC frees them, so memory saw-tooths but stays bounded (hand-written SGD, no optimizer)
# step_ms: 4
"""Small MLP fitted with manual SGD (p.data -= lr * p.grad) and a home-grown step tracker.

Each step builds a StepRecord that points back to the tracker, registers its own
bound method as a finaliser callback, and keeps a numpy snapshot of the hidden
activations.  The tracker only references the latest record (and the previous
one, for deltas), so older records become unreachable cycles: reference
counting cannot free them, but the generational GC does within a few dozen
steps (plus an explicit gc.collect() every 500 steps, as the production
script does).  RSS wobbles by a few MB and stays flat.
"""
import gc
import time

import numpy as np
import torch
import torch.nn as nn


class StepRecord:
    def __init__(self, tracker, step, hidden, loss):
        self.tracker = tracker
        self.step = step
        self.hidden = hidden
        self.loss = loss
        self.prev = tracker.current
        self.callbacks = [self.summarise]

    def summarise(self):
        dead = float((self.hidden <= 0).mean())
        drift = 0.0
        if self.prev is not None:
            drift = float(np.abs(self.hidden.mean(0) - self.prev.hidden.mean(0)).mean())
        return {"step": self.step, "loss": self.loss, "dead_frac": dead, "drift": drift}


class Tracker:
    def __init__(self):
        self.current = None
        self.summaries = []

    def record(self, step, hidden, loss):
        rec = StepRecord(self, step, hidden, loss)
        if self.current is not None:
            self.current.prev = None  # keep only one step of history
        self.current = rec
        if step % 250 == 0:
            self.summaries.append(rec.callbacks[0]())
        return rec


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    fc1, fc2, fc3 = nn.Linear(6, 512), nn.Linear(512, 128), nn.Linear(128, 1)
    params = [p for m in (fc1, fc2, fc3) for p in m.parameters()]
    tracker = Tracker()
    lr = 0.05
    t0 = time.time()
    steps = 5000
    for step in range(1, steps + 1):
        x = torch.randn(512, 6)
        y = (x[:, :3].prod(1) + torch.sin(x[:, 3] * x[:, 4]) - x[:, 5].abs()).unsqueeze(1)
        h1 = torch.relu(fc1(x))
        h2 = torch.relu(fc2(h1))
        loss = (fc3(h2) - y).pow(2).mean()
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params:
                p.data -= lr * p.grad
        tracker.record(step, h2.detach().numpy().copy(), loss.item())
        if step % 500 == 0:
            gc.collect()
        if step % 1000 == 0:
            s = tracker.summaries[-1]
            print(f"step {step}  loss {s['loss']:.4f}  dead {s['dead_frac']:.2f}  drift {s['drift']:.4f}"
                  f"  gc gen counts {gc.get_count()}  ({time.time() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
