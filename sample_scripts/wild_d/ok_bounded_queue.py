# expect: no_leak
# holder: none
# pattern: background thread generates training batches as fast as it can into queue.Queue(maxsize=16); put() blocks when the queue is full, so the backlog is capped while the consumer trains online
# step_ms: 9
"""Online regression with a background data-generating thread.

A producer thread simulates a click-stream feature extractor: it builds
mini-batches of dense features (with hashing of categorical fields) as fast
as it can and hands them to the trainer through ``queue.Queue(maxsize=16)``.
The main thread pops batches and does one Adam step each on a small MLP.

The producer is faster than the trainer, which looks like the classic
"unbounded backlog" bug, but ``put`` blocks once 16 batches are waiting, so
at most ~16 batches are ever alive.  A sentinel shuts the producer down.
"""
import queue
import threading
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

BATCH = 256
N_DENSE = 64
N_HASH = 2 ** 10
N_CATEGORICAL = 6
N_STEPS = 2000
STOP = object()


def featurize(rng, w_true):
    dense = rng.standard_normal((BATCH, N_DENSE)).astype(np.float32)
    cats = rng.integers(0, 50_000, size=(BATCH, N_CATEGORICAL))
    hashed = np.zeros((BATCH, N_HASH), dtype=np.float32)
    buckets = (cats * 2654435761 + np.arange(N_CATEGORICAL) * 97) % N_HASH
    np.add.at(hashed, (np.repeat(np.arange(BATCH), N_CATEGORICAL), buckets.ravel()), 1.0)
    X = np.hstack([dense, hashed])
    y = X @ w_true + 0.1 * rng.standard_normal(BATCH).astype(np.float32)
    return torch.from_numpy(X), torch.from_numpy(y.astype(np.float32))


def producer(q, stop_event, seed=0):
    rng = np.random.default_rng(seed)
    w_true = rng.standard_normal(N_DENSE + N_HASH).astype(np.float32) * 0.1
    produced = 0
    while not stop_event.is_set():
        batch = featurize(rng, w_true)
        while not stop_event.is_set():
            try:
                q.put(batch, timeout=0.1)
                produced += 1
                break
            except queue.Full:
                continue
    q.put(STOP)
    print(f"producer exiting after {produced} batches")


def main():
    q = queue.Queue(maxsize=16)
    stop_event = threading.Event()
    th = threading.Thread(target=producer, args=(q, stop_event), daemon=True)
    th.start()

    model = nn.Sequential(nn.Linear(N_DENSE + N_HASH, 256), nn.ReLU(), nn.Linear(256, 64), nn.ReLU(),
                          nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ema = None
    t0 = time.time()
    for step in range(N_STEPS):
        X, y = q.get()
        loss = F.mse_loss(model(X).squeeze(-1), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        if (step + 1) % 500 == 0:
            print(f"[{time.time() - t0:5.1f}s] step {step + 1:5d}  loss={ema:.4f}  queued={q.qsize()}")

    stop_event.set()
    # drain so the producer can deliver its sentinel
    while q.get() is not STOP:
        pass
    th.join()


if __name__ == "__main__":
    main()
