# expect: leak
# holder: watchdog._timers|_timers._queue
# pattern: every request is registered with DeadlineWatchdog via sched.scheduler.enterabs(request.deadline, ...) where the scheduler runs on time.monotonic but the deadline is wall-clock time.time() + timeout; the events are ~1.7e9 s "in the future", so run(blocking=False) never fires or removes them, and nothing cancels them on completion, so the scheduler's queue keeps every Request (input patch tensor + output probabilities) alive (inference_mode, no optimizer)
# step_ms: 10
"""Micro-batching scoring server for a wafer-defect classifier (simulated traffic).

Each tick of the serving loop takes the requests that arrived since the last
tick, stacks them into one batch, runs the CNN under inference_mode and fills
in every request's class probabilities.  A small deadline watchdog makes sure
that requests which are still pending when their deadline passes are reported
as timed out (the deadline is stored as a wall-clock timestamp so it can be
put straight into the access log).
"""
import argparse
import sched
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

CLASSES = ["none", "center", "donut", "edge_loc", "edge_ring", "loc", "random", "scratch"]


@dataclass
class Request:
    request_id: int
    patch: torch.Tensor
    received_at: float
    deadline: float
    done: bool = False
    probs: torch.Tensor = None
    meta: dict = field(default_factory=dict)


class DeadlineWatchdog:
    """Calls on_timeout(request) for requests still pending at their deadline."""

    def __init__(self, on_timeout):
        self._timers = sched.scheduler(time.monotonic, time.sleep)
        self._on_timeout = on_timeout

    def watch(self, request):
        self._timers.enterabs(request.deadline, 0, self._fire, argument=(request,))

    def _fire(self, request):
        if not request.done:
            self._on_timeout(request)

    def poll(self):
        # never blocks: only runs the callbacks that are already due
        self._timers.run(blocking=False)


class DefectNet(nn.Module):
    def __init__(self, n_classes=len(CLASSES)):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
        )
        self.head = nn.Linear(32 * 16, n_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


class TrafficGenerator:
    """Poisson arrivals (rate in requests/s) of synthetic 64x64 wafer-map patches."""

    def __init__(self, seed, rate_per_s, timeout_s):
        self.rng = np.random.default_rng(seed)
        self.rate = rate_per_s
        self.last_poll = time.time()
        self.timeout_s = timeout_s
        self.next_id = 0
        yy, xx = np.mgrid[-1:1:64j, -1:1:64j]
        self.radius = np.sqrt(xx ** 2 + yy ** 2).astype(np.float32)

    def _patch(self):
        kind = self.rng.integers(len(CLASSES))
        img = (self.rng.random((64, 64)) < 0.05).astype(np.float32)
        if kind == 1:
            img[self.radius < 0.3] = 1.0
        elif kind == 2:
            img[(self.radius > 0.4) & (self.radius < 0.6)] = 1.0
        elif kind == 4:
            img[self.radius > 0.85] = 1.0
        img[self.radius > 1.0] = 0.0
        return torch.from_numpy(img).unsqueeze(0)

    def arrivals(self):
        now = time.time()
        elapsed, self.last_poll = now - self.last_poll, now
        out = []
        for _ in range(self.rng.poisson(self.rate * elapsed)):
            now = time.time()
            out.append(Request(self.next_id, self._patch(), now, now + self.timeout_s))
            self.next_id += 1
        return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=17.0, help="seconds to serve")
    parser.add_argument("--rate", type=float, default=250.0, help="mean arrivals per second")
    parser.add_argument("--max-wait-ms", type=float, default=10.0, help="micro-batching window")
    parser.add_argument("--timeout", type=float, default=2.0, help="per-request deadline (s)")
    parser.add_argument("--report-every", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    model = DefectNet().eval()
    traffic = TrafficGenerator(args.seed, args.rate, args.timeout)
    stats = {"served": 0, "timeouts": 0, "latency_ms": 0.0}

    def on_timeout(request):
        stats["timeouts"] += 1
        print(f"request {request.request_id} timed out", flush=True)

    watchdog = DeadlineWatchdog(on_timeout)
    class_counts = np.zeros(len(CLASSES), dtype=np.int64)

    t_start = last_report = time.time()
    tick = 0
    while time.time() - t_start < args.duration:
        tick += 1
        tick_start = time.time()
        batch = traffic.arrivals()
        for request in batch:
            watchdog.watch(request)
        if batch:
            x = torch.stack([r.patch for r in batch])
            with torch.inference_mode():
                probs = model(x).softmax(dim=1)
            finished = time.time()
            for request, p in zip(batch, probs):
                request.probs = p
                request.done = True
                stats["latency_ms"] += (finished - request.received_at) * 1000
            class_counts += np.bincount(probs.argmax(1).numpy(), minlength=len(CLASSES))
            stats["served"] += len(batch)
        watchdog.poll()
        idle = args.max_wait_ms / 1000 - (time.time() - tick_start)
        if idle > 0:
            time.sleep(idle)

        now = time.time()
        if now - last_report >= args.report_every:
            served = max(stats["served"], 1)
            top = CLASSES[int(class_counts.argmax())]
            print(f"[{now - t_start:5.1f}s] ticks {tick}  served {stats['served']}  "
                  f"timeouts {stats['timeouts']}  mean queueing+compute {stats['latency_ms'] / served:.2f} ms  "
                  f"most frequent: {top}", flush=True)
            last_report = now

    print(f"shutdown after {tick} ticks, {stats['served']} requests, {stats['timeouts']} timeouts")


if __name__ == "__main__":
    main()
