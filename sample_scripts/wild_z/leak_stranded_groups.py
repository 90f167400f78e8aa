# expect: leak
# holder: BatchWorker.run:groups|run:groups|groups
# pattern: micro-batching image-classification server with hot model reloads (torch CNN under torch.inference_mode, no optimizer; one step = one micro-batch of up to 16 padded images run by the worker, ~4 ms, code in main() as the client + a ModelRegistry class + a BatchWorker threading.Thread whose run() owns the batching state). Requests are stamped with the model version that was live when they were admitted and the worker groups them in a run()-local dict `groups` keyed by (version, padded size bucket); a group is flushed when it reaches max_batch or, "for latency", when it is older than max_wait -- but that check only runs for the group that just received a request (the queue-timeout branch of the loop does nothing). A new model version is published every 200 requests (about every 0.3 s), after which no request ever joins an old-version group again, so each reload strands the partially filled group of every size bucket; the clients give up on those requests after a timeout, but their preprocessed float32 image tensors and futures stay in groups, which gains ~15-20 requests (~3-4 MB) per reload for the whole run.
# step_ms: 4
"""Micro-batching inference server for a thumbnail classifier.

Client threads (here: main()) submit variable-sized images; a single
BatchWorker pads requests of similar size into micro-batches and runs the
model that was live when each request was admitted (consistent A/B
attribution across hot reloads).  The registry keeps the two most recent
model versions for requests that are still in flight.
"""
import copy
import os
import queue
import threading
import time
from collections import OrderedDict, deque
from concurrent.futures import Future

import numpy as np
import psutil
import torch
import torch.nn as nn
import torch.nn.functional as F

N_REQUESTS = 11000
RELOAD_EVERY = 200          # requests between model publications
N_CLASSES = 20


def rss_mb():
    return psutil.Process(os.getpid()).memory_info().rss / 2**20


class ThumbNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 5, stride=2, padding=2)
        self.c2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.c3 = nn.Conv2d(32, 64, 3, stride=2, padding=1)
        self.c4 = nn.Conv2d(64, 64, 3, stride=1, padding=1)
        self.head = nn.Linear(64, N_CLASSES)

    def forward(self, x):
        x = F.relu(self.c1(x))
        x = F.relu(self.c2(x))
        x = F.relu(self.c3(x))
        x = F.relu(self.c4(x))
        return self.head(x.mean(dim=(2, 3)))


class ModelRegistry:
    def __init__(self, keep=2):
        self._lock = threading.Lock()
        self._models = OrderedDict()
        self.keep = keep
        self.version = 0

    def publish(self, model):
        model.eval()
        with self._lock:
            self.version += 1
            self._models[self.version] = model
            while len(self._models) > self.keep:
                self._models.popitem(last=False)
            return self.version

    def get(self, version):
        with self._lock:
            return self._models.get(version) or next(reversed(self._models.values()))


class Request:
    __slots__ = ("image", "version", "future", "t_submit")

    def __init__(self, image, version):
        self.image = image
        self.version = version
        self.future = Future()
        self.t_submit = time.perf_counter()


def bucket_of(shape, step=32):
    _, h, w = shape
    return (-(-h // step) * step, -(-w // step) * step)


class PendingGroup:
    __slots__ = ("t_first", "items")

    def __init__(self, t_first):
        self.t_first = t_first
        self.items = []


class BatchWorker(threading.Thread):
    def __init__(self, registry, max_batch=16, max_wait=0.02):
        super().__init__(name="batch-worker", daemon=True)
        self.registry = registry
        self.inbox = queue.Queue(maxsize=256)
        self.max_batch = max_batch
        self.max_wait = max_wait
        self.batches = 0
        self.busy_s = 0.0

    def run(self):
        groups = {}  # (model version, size bucket) -> PendingGroup
        while True:
            try:
                req = self.inbox.get(timeout=0.05)
            except queue.Empty:
                continue
            if req is None:
                for key, group in groups.items():
                    for r in group.items:
                        r.future.set_exception(RuntimeError("server shutting down"))
                return
            key = (req.version, bucket_of(req.image.shape))
            group = groups.get(key)
            if group is None:
                group = groups[key] = PendingGroup(time.perf_counter())
            group.items.append(req)
            if (len(group.items) >= self.max_batch
                    or time.perf_counter() - group.t_first >= self.max_wait):
                del groups[key]
                self._run_batch(key, group.items)

    def _run_batch(self, key, items):
        t0 = time.perf_counter()
        version, (bh, bw) = key
        model = self.registry.get(version)
        # pad the batch dimension to a power of two: few distinct shapes keep the
        # conv kernels' primitive cache warm
        batch = torch.zeros(1 << (len(items) - 1).bit_length(), 3, bh, bw)
        for i, r in enumerate(items):
            _, h, w = r.image.shape
            batch[i, :, :h, :w] = r.image
        with torch.inference_mode():
            probs = torch.softmax(model(batch), dim=1)
        top_p, top_c = probs[:len(items)].max(dim=1)
        for r, p, c in zip(items, top_p.tolist(), top_c.tolist()):
            r.future.set_result((c, p, version))
        self.batches += 1
        self.busy_s += time.perf_counter() - t0


SIZES = [(96, 96), (144, 144), (192, 192), (96, 144), (144, 96), (192, 144), (144, 192),
         (72, 96), (96, 72), (168, 168), (120, 120), (192, 96), (96, 192), (60, 60)]
SIZE_P = np.array([14, 12, 10, 8, 8, 6, 6, 6, 6, 5, 5, 4, 4, 3], float)
SIZE_P /= SIZE_P.sum()


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(2024)
    registry = ModelRegistry()
    base = ThumbNet()
    registry.publish(copy.deepcopy(base))
    worker = BatchWorker(registry)
    worker.start()

    inflight = deque()
    served = timeouts = 0
    latencies = deque(maxlen=2000)
    t0 = time.perf_counter()
    print(f"serving {N_REQUESTS} requests; rss at loop start {rss_mb():.1f} MB", flush=True)
    for i in range(N_REQUESTS):
        h, w = SIZES[int(rng.choice(len(SIZES), p=SIZE_P))]
        raw = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)  # decoded upload
        # preprocessing happens on the client thread; the worker only batches
        img = torch.from_numpy(raw).permute(2, 0, 1).float().sub_(127.5).div_(64.0)
        req = Request(img, registry.version)
        worker.inbox.put(req)
        inflight.append((req.t_submit, req.future))
        req.future.add_done_callback(
            lambda f, t=req.t_submit: latencies.append(time.perf_counter() - t))
        del req, img
        if (i + 1) % RELOAD_EVERY == 0:
            # a freshly fine-tuned model arrives from the training job
            with torch.no_grad():
                for p in base.parameters():
                    p.add_(0.01 * torch.randn_like(p))
            registry.publish(copy.deepcopy(base))
        # client side: harvest answers, give up on requests older than 1 s
        now = time.perf_counter()
        while inflight:
            t_sub, fut = inflight[0]
            if fut.done():
                inflight.popleft()
                served += 1
            elif now - t_sub > 1.0:
                inflight.popleft()
                timeouts += 1
            else:
                break
        if i % 4 == 3:
            time.sleep(0.004)  # arrival rate ~ what one worker can absorb
        if (i + 1) % 2000 == 0:
            el = time.perf_counter() - t0
            print(f"  req {i + 1:5d}  model v{registry.version}  served {served}  "
                  f"gave up {timeouts}  p50 {np.median(latencies) * 1e3:.0f} ms  "
                  f"batches {worker.batches}  "
                  f"{worker.busy_s / max(worker.batches, 1) * 1e3:.1f} ms/batch  "
                  f"{el:.1f}s  rss {rss_mb():.1f} MB", flush=True)
    time.sleep(0.3)
    print(f"loop done; rss at loop end {rss_mb():.1f} MB", flush=True)
    worker.inbox.put(None)
    worker.join()


if __name__ == "__main__":
    main()
