# expect: leak
# holder: pool._scratch|RecyclingInferencePool._scratch|Workspace
# pattern: batch image-classification inference service (small CNN under torch.inference_mode, no optimizer, ~30 ms per request batch per worker thread (two workers), code in main() + a RecyclingInferencePool class with threading.Thread workers fed by a bounded queue.Queue); each worker thread lazily allocates a Workspace (preallocated float32 staging tensor for the normalised batch plus logits/probability buffers, ~3.3 MB) and registers it in pool._scratch keyed by threading.current_thread().name; workers are retired after max_tasks batches and replaced by fresh threads with new names (so they pick up the latest model version from the registry), but nothing removes the retired thread's entry, so pool._scratch gains one workspace per retired worker and grows steadily for the whole run
# step_ms: 30
"""Batch inference service with recycled worker threads.

Requests arrive as uint8 image batches.  A small pool of worker threads
normalises them into a per-worker staging buffer, runs the current model
version and posts class probabilities back to the dispatcher.  Workers
are retired after a fixed number of batches and replaced by fresh
threads, which then bind the newest model published by the registry
(the training side publishes a new version every few hundred batches).
"""
from __future__ import annotations

import argparse
import itertools
import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
log = logging.getLogger("infer")

IMG = 48
CHANNELS = 3
N_CLASSES = 10
MAX_BATCH = 96


def make_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(CHANNELS, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(32, N_CLASSES),
    )


class ModelRegistry:
    """Holds the newest published model version."""

    def __init__(self, seed: int) -> None:
        torch.manual_seed(seed)
        self._lock = threading.Lock()
        self._version = 0
        self._model = make_model().eval()

    def publish_perturbed(self, scale: float = 0.01) -> int:
        new = make_model().eval()
        with torch.no_grad():
            for p_new, p_old in zip(new.parameters(), self._model.parameters()):
                p_new.copy_(p_old + scale * torch.randn_like(p_old))
        with self._lock:
            self._model = new
            self._version += 1
            return self._version

    def latest(self) -> tuple[int, nn.Module]:
        with self._lock:
            return self._version, self._model


@dataclass
class Request:
    rid: int
    images: np.ndarray      # (n, H, W, C) uint8
    labels: np.ndarray


@dataclass
class Response:
    rid: int
    version: int
    worker: str
    probs: np.ndarray
    labels: np.ndarray


class Workspace:
    def __init__(self, max_batch: int) -> None:
        self.staging = torch.empty(max_batch, CHANNELS, IMG, IMG)
        self.logits = torch.empty(max_batch, N_CLASSES)
        self.probs = torch.empty(max_batch, N_CLASSES)
        self.mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1) * 255
        self.std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1) * 255


class RecyclingInferencePool:
    def __init__(self, registry: ModelRegistry, n_workers: int, max_tasks: int) -> None:
        self.registry = registry
        self.n_workers = n_workers
        self.max_tasks = max_tasks
        self.requests: queue.Queue[Optional[Request]] = queue.Queue(maxsize=2 * n_workers)
        self.responses: queue.Queue[Response] = queue.Queue()
        self._scratch: dict[str, Workspace] = {}
        self._lock = threading.Lock()
        self._gen = itertools.count()
        self._workers: list[threading.Thread] = []
        self._stopping = False
        self.retired = 0

    def _workspace(self) -> Workspace:
        name = threading.current_thread().name
        ws = self._scratch.get(name)
        if ws is None:
            ws = Workspace(MAX_BATCH)
            with self._lock:
                self._scratch[name] = ws
        return ws

    def _spawn(self) -> None:
        t = threading.Thread(target=self._run, name=f"infer-w{next(self._gen)}", daemon=True)
        self._workers.append(t)
        t.start()

    def start(self) -> None:
        for _ in range(self.n_workers):
            self._spawn()

    def _run(self) -> None:
        version, model = self.registry.latest()
        ws = self._workspace()
        name = threading.current_thread().name
        done = 0
        while True:
            req = self.requests.get()
            if req is None:
                return
            n = len(req.images)
            x = ws.staging[:n]
            x.copy_(torch.from_numpy(req.images).permute(0, 3, 1, 2))
            x.sub_(ws.mean).div_(ws.std)
            with torch.inference_mode():
                ws.logits[:n] = model(x)
                torch.softmax(ws.logits[:n], dim=1, out=ws.probs[:n])
            self.responses.put(Response(req.rid, version, name, ws.probs[:n].numpy().copy(), req.labels))
            done += 1
            if done >= self.max_tasks:
                break
        with self._lock:
            self.retired += 1
            if not self._stopping:
                self._spawn()

    def shutdown(self) -> None:
        self._stopping = True
        for _ in range(len(self._workers)):
            try:
                self.requests.put_nowait(None)
            except queue.Full:
                break
        for t in self._workers:
            t.join(timeout=0.5)


def synth_batch(rng: np.random.Generator, n: int, protos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    labels = rng.integers(0, N_CLASSES, n)
    noise = rng.normal(0, 25, (n, IMG, IMG, CHANNELS))
    imgs = np.clip(protos[labels] + noise, 0, 255).astype(np.uint8)
    return imgs, labels


def main() -> None:
    ap = argparse.ArgumentParser(description="batch inference service")
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-tasks", type=int, default=16)
    ap.add_argument("--publish-every", type=int, default=150)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(message)s")

    rng = np.random.default_rng(args.seed)
    protos = rng.uniform(40, 215, (N_CLASSES, IMG, IMG, CHANNELS))
    registry = ModelRegistry(args.seed)
    pool = RecyclingInferencePool(registry, args.workers, args.max_tasks)
    pool.start()

    sizes = [32, 48, 64, 96]
    in_flight = 0
    received = 0
    conf_sum = 0.0
    agree = 0
    total = 0
    versions_seen: set[int] = set()
    t0 = last = time.perf_counter()
    sent = 0
    while received < args.requests:
        while sent < args.requests and in_flight < 2 * args.workers:
            imgs, labels = synth_batch(rng, sizes[sent % len(sizes)], protos)
            pool.requests.put(Request(sent, imgs, labels))
            sent += 1
            in_flight += 1
            if sent % args.publish_every == 0:
                v = registry.publish_perturbed()
                log.info("registry published model v%d", v)
        resp = pool.responses.get()
        in_flight -= 1
        received += 1
        versions_seen.add(resp.version)
        conf_sum += float(resp.probs.max(1).sum())
        agree += int((resp.probs.argmax(1) == resp.labels).sum())
        total += len(resp.labels)
        now = time.perf_counter()
        if now - last > 3.0 or received == args.requests:
            log.info("batches %d/%d mean_conf=%.3f top1_vs_label=%.3f retired_workers=%d (%.1f ms/batch)",
                     received, args.requests, conf_sum / total, agree / total, pool.retired,
                     1000 * (now - t0) / received)
            last = now
    pool.shutdown()
    log.info("served %d images with model versions %s", total, sorted(versions_seen))


if __name__ == "__main__":
    main()
