# expect: leak
# holder: self._draining|server._draining|_draining._waiters
# pattern: asyncio micro-batching inference front-end for a heart-sound (PCG) murmur classifier (1D CNN, torch.inference_mode, no optimizer); submit() starts a watcher task per request, _abort_on_drain(req), that awaits the server's self._draining asyncio.Event so in-flight requests can be failed on shutdown, but the watcher is never cancelled when the request completes; the draining event is only set on SIGTERM, so every watcher stays parked in _draining._waiters (future -> task -> coroutine frame -> req) and keeps each finished request's waveform tensor and output probabilities alive
# step_ms: 16
"""Async micro-batching front-end for the PCG murmur screening model.

Clients submit 4 s phonocardiogram recordings (4 kHz, one channel); the
batcher collects up to --max-batch requests (or whatever arrived within
--max-wait-ms), runs the 1D CNN once on the padded batch and resolves each
request's future with its class probabilities.  On SIGTERM the server stops
accepting work and fails everything that is still in flight, so that the
load balancer retries those requests on another replica.

A synthetic load generator plays the role of the clients: Poisson arrivals
at --rate requests/s, heart-sound-like signals (S1/S2 bursts plus an
optional systolic murmur) and a running accuracy / latency report.
"""
import argparse
import asyncio
import math
import signal
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

FS = 4000
CLASSES = ("normal", "murmur", "noisy")


class ServerDraining(RuntimeError):
    pass


class MurmurNet(nn.Module):
    def __init__(self, width=24):
        super().__init__()
        self.stem = nn.Conv1d(1, width, 31, stride=4, padding=15)
        self.blocks = nn.ModuleList([
            nn.Conv1d(width, width * 2, 15, stride=4, padding=7),
            nn.Conv1d(width * 2, width * 2, 9, stride=2, padding=4),
            nn.Conv1d(width * 2, width * 4, 9, stride=2, padding=4),
        ])
        self.norms = nn.ModuleList([nn.BatchNorm1d(c) for c in (width * 2, width * 2, width * 4)])
        self.head = nn.Linear(width * 4 * 2, len(CLASSES))

    def forward(self, x):
        x = F.gelu(self.stem(x.unsqueeze(1)))
        for conv, bn in zip(self.blocks, self.norms):
            x = F.gelu(bn(conv(x)))
        feats = torch.cat([x.mean(-1), x.amax(-1)], dim=1)
        return self.head(feats)


@dataclass
class Request:
    rid: int
    waveform: torch.Tensor
    label: int
    future: asyncio.Future
    t_submit: float = field(default_factory=time.perf_counter)
    probs: torch.Tensor = None


class InferenceServer:
    def __init__(self, model, max_batch=16, max_wait_ms=8.0):
        self.model = model.eval()
        self.max_batch = max_batch
        self.max_wait = max_wait_ms / 1000.0
        self._queue = asyncio.Queue()
        self._draining = asyncio.Event()
        self._next_id = 0
        self.batches = 0
        self.batch_ms = 0.0

    async def submit(self, waveform, label=-1):
        if self._draining.is_set():
            raise ServerDraining("server is shutting down")
        loop = asyncio.get_running_loop()
        req = Request(self._next_id, waveform, label, loop.create_future())
        self._next_id += 1
        asyncio.create_task(self._abort_on_drain(req))
        await self._queue.put(req)
        return await req.future

    async def _abort_on_drain(self, req):
        await self._draining.wait()
        if not req.future.done():
            req.future.set_exception(ServerDraining(f"request {req.rid} aborted"))

    def begin_drain(self):
        self._draining.set()

    async def _collect(self):
        first = await self._queue.get()
        batch = [first]
        deadline = time.perf_counter() + self.max_wait
        while len(batch) < self.max_batch:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(self._queue.get(), remaining))
            except asyncio.TimeoutError:
                break
        return batch

    async def run(self):
        while True:
            batch = await self._collect()
            live = [r for r in batch if not r.future.done()]
            if not live:
                continue
            t0 = time.perf_counter()
            x = torch.stack([r.waveform for r in live])
            x = (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-5)
            with torch.inference_mode():
                probs = self.model(x).softmax(-1)
            self.batch_ms += (time.perf_counter() - t0) * 1000
            self.batches += 1
            for r, p in zip(live, probs):
                r.probs = p
                r.future.set_result(p)
            await asyncio.sleep(0)


def synth_pcg(rng, label, seconds=4.0):
    n = int(FS * seconds)
    t = np.arange(n) / FS
    hr = rng.uniform(55, 110) / 60.0
    period = 1.0 / hr
    phase = (t + rng.uniform(0, period)) % period
    env_s1 = np.exp(-((phase - 0.05) / 0.018) ** 2)
    env_s2 = np.exp(-((phase - 0.35 * period) / 0.015) ** 2)
    sig = env_s1 * np.sin(2 * np.pi * 45 * t) + 0.7 * env_s2 * np.sin(2 * np.pi * 70 * t)
    if label == 1:
        systole = (phase > 0.08) & (phase < 0.33 * period)
        sig += 0.35 * systole * rng.standard_normal(n) * np.sin(2 * np.pi * 180 * t) ** 2
    noise = 0.05 if label != 2 else 0.6
    sig += noise * rng.standard_normal(n)
    return torch.from_numpy(sig.astype(np.float32))


def warm_start(model, rng, steps=25, batch=32):
    """Quick fit on synthetic recordings so the demo produces sensible outputs."""
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.train()
    for _ in range(steps):
        labels = rng.integers(0, len(CLASSES), size=batch)
        x = torch.stack([synth_pcg(rng, int(y), 1.0) for y in labels])
        x = (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-5)
        loss = F.cross_entropy(model(x), torch.from_numpy(labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return loss.item()


async def client(server, rng, rid, stats):
    label = int(rng.integers(0, len(CLASSES)))
    wave = synth_pcg(rng, label)
    t0 = time.perf_counter()
    try:
        probs = await server.submit(wave, label)
    except ServerDraining:
        stats["aborted"] += 1
        return
    stats["latency_ms"].append((time.perf_counter() - t0) * 1000)
    stats["correct"] += int(int(probs.argmax()) == label)
    stats["done"] += 1


async def main_async(args):
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = MurmurNet()
    print(f"warm start loss {warm_start(model, rng):.3f}")

    server = InferenceServer(model, args.max_batch, args.max_wait_ms)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, server.begin_drain)
    batcher = asyncio.create_task(server.run())

    stats = {"done": 0, "correct": 0, "aborted": 0, "latency_ms": []}
    inflight = set()
    t_start = time.perf_counter()
    next_report = t_start + args.report_every
    n_sent = 0
    while time.perf_counter() - t_start < args.duration:
        task = asyncio.create_task(client(server, rng, n_sent, stats))
        inflight.add(task)
        task.add_done_callback(inflight.discard)
        n_sent += 1
        await asyncio.sleep(rng.exponential(1.0 / args.rate))
        now = time.perf_counter()
        if now >= next_report:
            lat = stats["latency_ms"][-500:]
            print(f"t={now - t_start:5.1f}s sent={n_sent:6d} done={stats['done']:6d} "
                  f"acc={stats['correct'] / max(stats['done'], 1):.3f} "
                  f"p50={np.percentile(lat, 50) if lat else math.nan:6.1f}ms "
                  f"batches={server.batches} ({server.batch_ms / max(server.batches, 1):.1f} ms/batch)",
                  flush=True)
            stats["latency_ms"] = lat
            next_report += args.report_every

    if inflight:
        await asyncio.gather(*inflight)
    batcher.cancel()
    try:
        await batcher
    except asyncio.CancelledError:
        pass
    print(f"served {stats['done']} requests, accuracy {stats['correct'] / max(stats['done'], 1):.3f}, "
          f"aborted {stats['aborted']}")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--duration", type=float, default=18.0, help="seconds of synthetic traffic")
    p.add_argument("--rate", type=float, default=170.0, help="mean arrivals per second")
    p.add_argument("--max-batch", type=int, default=16)
    p.add_argument("--max-wait-ms", type=float, default=8.0)
    p.add_argument("--report-every", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    torch.set_num_threads(1)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
