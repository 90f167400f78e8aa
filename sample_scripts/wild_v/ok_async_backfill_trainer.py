# expect: no_leak
# holder:
# pattern: asyncio feature-backfill + model-refresh job (1D CNN over multichannel sensor windows, torch.optim.AdamW, ~85 ms per training step, code in async functions + a MetricsHub class); partition readers push raw windows through asyncio.Queue(maxsize=4) to featurizer tasks (run_in_executor on a 2-thread ThreadPoolExecutor) and on to the trainer through another bounded queue, every per-partition task is tracked in a set with add_done_callback(set.discard), and per-step metrics are fanned out to dashboard subscribers that come and go (about half of them are cancelled by the connection manager); it looks like the async twin of an unbounded fan-out, but every subscriber queue is bounded (put_nowait drops the oldest frame when full) and is unsubscribed in a finally block, so cancelled sessions remove themselves too, the backpressure of the bounded queues keeps at most a few raw windows and feature batches alive, and finished tasks leave the task set, so memory is flat after the first steps
# step_ms: 85
"""Feature backfill and model refresh.

Reads historical partitions of multichannel sensor windows, computes
short-time spectral features on a small thread pool and refreshes the fault
classifier online from the resulting batches.  Training metrics are
streamed to whoever has the job dashboard open.
"""
from __future__ import annotations

import argparse
import asyncio
import concurrent.futures as cf
import logging
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
log = logging.getLogger("backfill")

CH = 12
WIN = 1024
BATCH = 96
N_CLASSES = 6


@dataclass
class RawChunk:
    partition: int
    x: np.ndarray      # (BATCH, CH, WIN) float32
    y: np.ndarray


@dataclass
class FeatureBatch:
    partition: int
    x: torch.Tensor    # (BATCH, 2*CH, WIN // 4) log spectra of both half-windows
    y: torch.Tensor


@dataclass(frozen=True)
class StepMetrics:
    step: int
    loss: float
    acc: float
    lr: float


class MetricsHub:
    def __init__(self, per_subscriber: int = 16) -> None:
        self.per_subscriber = per_subscriber
        self._subs: set[asyncio.Queue] = set()
        self.dropped_frames = 0

    def subscribe(self) -> asyncio.Queue:
        q: asyncio.Queue = asyncio.Queue(maxsize=self.per_subscriber)
        self._subs.add(q)
        return q

    def unsubscribe(self, q: asyncio.Queue) -> None:
        self._subs.discard(q)

    def publish(self, m: StepMetrics) -> None:
        for q in self._subs:
            if q.full():
                q.get_nowait()
                self.dropped_frames += 1
            q.put_nowait(m)

    def __len__(self) -> int:
        return len(self._subs)


class FaultNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(2 * CH, 64, 7, padding=3), nn.GELU(), nn.MaxPool1d(2),
            nn.Conv1d(64, 96, 5, padding=2), nn.GELU(), nn.MaxPool1d(2),
            nn.Conv1d(96, 128, 3, padding=1), nn.GELU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
            nn.Linear(128, N_CLASSES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def synth_partition_chunk(rng: np.random.Generator, partition: int) -> RawChunk:
    y = rng.integers(0, N_CLASSES, BATCH)
    t = np.arange(WIN) / 2048.0
    f = 30 + 25 * y[:, None, None] + 3 * np.arange(CH)[None, :, None]
    x = np.sin(2 * np.pi * f * t) + rng.normal(0, 1.0, (BATCH, CH, WIN))
    return RawChunk(partition, x.astype(np.float32), y)


def featurize(chunk: RawChunk) -> FeatureBatch:
    """Log magnitude spectra of the two half-windows of every channel."""
    halves = chunk.x.reshape(BATCH, CH, 2, WIN // 2) * np.hanning(WIN // 2).astype(np.float32)
    mag = np.abs(np.fft.rfft(halves, axis=-1))[..., : WIN // 4]
    feats = np.log1p(mag).transpose(0, 2, 1, 3).reshape(BATCH, 2 * CH, WIN // 4)
    feats = (feats - feats.mean(-1, keepdims=True)) / (feats.std(-1, keepdims=True) + 1e-6)
    return FeatureBatch(chunk.partition, torch.from_numpy(feats.astype(np.float32)), torch.from_numpy(chunk.y))


async def read_partition(pid: int, n_chunks: int, raw_q: asyncio.Queue, seed: int) -> None:
    rng = np.random.default_rng(seed + pid)
    for _ in range(n_chunks):
        await raw_q.put(synth_partition_chunk(rng, pid))


async def featurizer(raw_q: asyncio.Queue, feat_q: asyncio.Queue, pool: cf.Executor) -> None:
    loop = asyncio.get_running_loop()
    while True:
        chunk: Optional[RawChunk] = await raw_q.get()
        if chunk is None:
            await feat_q.put(None)
            return
        await feat_q.put(await loop.run_in_executor(pool, featurize, chunk))


async def dashboard(hub: MetricsHub, n_frames: int) -> float:
    q = hub.subscribe()
    best = float("inf")
    try:
        for _ in range(n_frames):
            m: StepMetrics = await q.get()
            best = min(best, m.loss)
    finally:
        hub.unsubscribe(q)
    return best


async def connection_manager(hub: MetricsHub, stop: asyncio.Event, seed: int) -> None:
    rng = np.random.default_rng(seed)
    sessions: set[asyncio.Task] = set()
    while not stop.is_set():
        await asyncio.sleep(float(rng.exponential(0.15)))
        t = asyncio.create_task(dashboard(hub, int(rng.integers(5, 60))))
        sessions.add(t)
        t.add_done_callback(sessions.discard)
        if sessions and rng.random() < 0.5:
            list(sessions)[int(rng.integers(0, len(sessions)))].cancel()
    for t in list(sessions):
        t.cancel()
    await asyncio.gather(*sessions, return_exceptions=True)


async def run(args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed)
    model = FaultNet()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    hub = MetricsHub()
    stop = asyncio.Event()
    raw_q: asyncio.Queue = asyncio.Queue(maxsize=4)
    feat_q: asyncio.Queue = asyncio.Queue(maxsize=4)
    pool = cf.ThreadPoolExecutor(max_workers=2, thread_name_prefix="feat")
    readers: set[asyncio.Task] = set()
    mgr = asyncio.create_task(connection_manager(hub, stop, args.seed + 7))
    feat_tasks = [asyncio.create_task(featurizer(raw_q, feat_q, pool)) for _ in range(2)]

    async def feed() -> None:
        pid = 0
        chunks_needed = args.steps
        while chunks_needed > 0:
            n = min(chunks_needed, args.chunks_per_partition)
            t = asyncio.create_task(read_partition(pid, n, raw_q, args.seed))
            readers.add(t)
            t.add_done_callback(readers.discard)
            await t
            chunks_needed -= n
            pid += 1
        for _ in feat_tasks:
            await raw_q.put(None)

    feeder = asyncio.create_task(feed())
    step = 0
    finished = 0
    loss_ema = acc_ema = None
    t0 = last = time.perf_counter()
    while finished < len(feat_tasks):
        fb: Optional[FeatureBatch] = await feat_q.get()
        if fb is None:
            finished += 1
            continue
        model.train()
        logits = model(fb.x)
        loss = nn.functional.cross_entropy(logits, fb.y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        step += 1
        acc = (logits.argmax(1) == fb.y).float().mean().item()
        loss_ema = loss.item() if loss_ema is None else 0.9 * loss_ema + 0.1 * loss.item()
        acc_ema = acc if acc_ema is None else 0.9 * acc_ema + 0.1 * acc
        hub.publish(StepMetrics(step, loss.item(), acc, sched.get_last_lr()[0]))
        await asyncio.sleep(0)
        now = time.perf_counter()
        if now - last > 3.0 or step == args.steps:
            log.info("step %d/%d partition=%d loss_ema=%.3f acc_ema=%.3f dashboards=%d dropped_frames=%d "
                     "(%.0f ms/step)", step, args.steps, fb.partition, loss_ema, acc_ema, len(hub),
                     hub.dropped_frames, 1000 * (now - t0) / step)
            last = now
    await feeder
    stop.set()
    await mgr
    pool.shutdown(wait=True)


def main() -> None:
    ap = argparse.ArgumentParser(description="feature backfill and model refresh")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--chunks-per-partition", type=int, default=25)
    ap.add_argument("--seed", type=int, default=2)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
