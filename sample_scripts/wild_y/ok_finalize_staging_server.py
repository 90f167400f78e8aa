# expect: no_leak
# holder:
# pattern: in-process image-classification serving loop (small CNN under torch.inference_mode, no optimizer, no training; one loop iteration = the client submits ~5 requests and the server runs one micro-batch of up to 8, ~3 ms, code in main() as the client + an InferenceServer and a StagingPool class). Every request copies its normalised image into a slot of a preallocated staging tensor, and the slot is handed back by `weakref.finalize(req, pool.release, slot)` when the Request object dies; requests are also indexed in a weakref.WeakValueDictionary and results go into a history. It looks like the finalize-registry pile-up (one finalize per request kept in a module-level registry, the pool that can grow), but the finalizer's callback is the pool's method and its only argument is the integer slot, so it does not keep the request alive: once the client drops a completed request the finalizer fires, returns the slot and removes itself from the registry; the weak index loses the entry at the same time, the pool only grows to the peak number of in-flight requests (the warm-up burst on the first tick; later bursts are smaller), and the result history is a deque(maxlen=64) of plain tuples, so memory is flat after warm-up.
# step_ms: 3
"""Micro-batching inference server with a weakref-managed staging pool."""
import itertools
import time
import weakref
from collections import deque

import numpy as np
import psutil
import torch
import torch.nn as nn

SHAPE = (3, 64, 64)


def rss_mb():
    return psutil.Process().memory_info().rss / 2**20


class StagingPool:
    """Preallocated float32 staging slots for normalised inputs."""

    def __init__(self, slots=16):
        self.buffers = torch.empty(slots, *SHAPE)
        self.free = list(range(slots))
        self.grow_events = 0

    def acquire(self):
        if not self.free:
            n = len(self.buffers)
            self.buffers = torch.cat([self.buffers, torch.empty(n, *SHAPE)])
            self.free.extend(range(n, 2 * n))
            self.grow_events += 1
        return self.free.pop()

    def release(self, slot):
        self.free.append(slot)


class Request:
    __slots__ = ("rid", "image", "slot", "result", "__weakref__")

    def __init__(self, rid, image):
        self.rid, self.image, self.slot, self.result = rid, image, None, None


class TinyCNN(nn.Module):
    def __init__(self, n_classes=20):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
            nn.Conv2d(64, 96, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(96, 128, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, n_classes),
        )

    def forward(self, x):
        return self.net(x)


class InferenceServer:
    def __init__(self, model, max_batch=8):
        self.model = model.eval()
        self.pool = StagingPool()
        self.queue = deque()
        self.inflight = weakref.WeakValueDictionary()
        self.history = deque(maxlen=64)
        self.max_batch = max_batch
        self.mean = torch.tensor([0.48, 0.46, 0.41]).view(3, 1, 1) * 255
        self.std = torch.tensor([0.23, 0.22, 0.23]).view(3, 1, 1) * 255
        self.served = 0

    def submit(self, req):
        req.slot = self.pool.acquire()
        self.pool.buffers[req.slot].copy_((req.image.float() - self.mean) / self.std)
        weakref.finalize(req, self.pool.release, req.slot)
        self.inflight[req.rid] = req
        self.queue.append(req)

    def step(self):
        batch = [self.queue.popleft() for _ in range(min(self.max_batch, len(self.queue)))]
        if not batch:
            return 0
        slots = torch.tensor([r.slot for r in batch])
        with torch.inference_mode():
            probs = self.model(self.pool.buffers.index_select(0, slots)).softmax(1)
            top_p, top_i = probs.topk(3, dim=1)
        for r, p, i in zip(batch, top_p.tolist(), top_i.tolist()):
            r.result = list(zip(i, p))
            self.history.append((r.rid, i[0], p[0]))
        self.served += len(batch)
        return len(batch)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    server = InferenceServer(TinyCNN())
    rid = itertools.count()
    pending = []
    ticks = 4500
    top1 = deque(maxlen=1000)
    print(f"start: rss={rss_mb():.1f} MB")
    t0 = time.time()
    for tick in range(1, ticks + 1):
        arrivals = rng.poisson(5) + (24 if tick % 400 == 1 else 0)     # periodic bursts
        if tick == 1:
            arrivals = 48                                               # warm-up traffic at start
        for _ in range(arrivals):
            img = torch.from_numpy(rng.integers(0, 256, size=SHAPE, dtype=np.uint8))
            req = Request(next(rid), img)
            server.submit(req)
            pending.append(req)
        server.step()
        still = []
        for req in pending:
            if req.result is None:
                still.append(req)
            else:
                top1.append(req.result[0][1])
        pending = still
        if tick % 500 == 0:
            print(f"tick {tick:5d}  served={server.served:6d}  queue={len(server.queue):3d}  "
                  f"in-flight={len(server.inflight):3d}  pool_slots={len(server.pool.buffers)} "
                  f"(grown {server.pool.grow_events}x)  mean top-1 p={np.mean(top1):.3f}  "
                  f"{1000 * (time.time() - t0) / tick:.2f} ms/tick  rss={rss_mb():.1f} MB")
    print(f"end: rss={rss_mb():.1f} MB  wall={time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
