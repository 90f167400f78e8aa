# expect: no_leak
# pattern: background loader thread prefetches batches into queue.Queue(maxsize=4); the producer is faster than the training step but blocks when the queue is full, so at most a few batches are alive
# step_ms: 110
"""U-Net-style segmentation of synthetic "cell" images with a hand-rolled
prefetching loader.

Image synthesis and augmentation (numpy) run in a background thread that
feeds ``queue.Queue(maxsize=4)``. Producing a batch is much faster than a
training step, so the queue is normally full and the producer spends most
of its time blocked in ``put()``; at most ``maxsize + 2`` batches exist at
any moment. At the end a stop event is set, the queue is drained, and the
thread is joined. Only Python floats are kept for logging.
"""

import argparse
import queue
import random
import threading
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

IMG = 64


def synth_cells(rng, batch):
    yy, xx = np.mgrid[0:IMG, 0:IMG].astype(np.float32)
    imgs = np.zeros((batch, 1, IMG, IMG), np.float32)
    masks = np.zeros((batch, IMG, IMG), np.int64)
    for b in range(batch):
        for _ in range(rng.integers(3, 9)):
            cy, cx = rng.uniform(8, IMG - 8, size=2)
            ry, rx = rng.uniform(4, 12, size=2)
            inside = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
            imgs[b, 0][inside] += rng.uniform(0.4, 1.0)
            masks[b][inside] = 1
    imgs += rng.normal(0, 0.25, imgs.shape).astype(np.float32)
    if rng.random() < 0.5:  # augmentation
        imgs, masks = imgs[..., ::-1].copy(), masks[..., ::-1].copy()
    return imgs, masks


class PrefetchLoader:
    def __init__(self, batch, seed, depth=4):
        self.batch = batch
        self.rng = np.random.default_rng(seed)
        self.q = queue.Queue(maxsize=depth)
        self.stop = threading.Event()
        self.produced = 0
        self.thread = threading.Thread(target=self._worker, name="prefetch", daemon=True)
        self.thread.start()

    def _worker(self):
        while not self.stop.is_set():
            x, y = synth_cells(self.rng, self.batch)
            item = (torch.from_numpy(x), torch.from_numpy(y))
            while not self.stop.is_set():
                try:
                    self.q.put(item, timeout=0.1)
                    self.produced += 1
                    break
                except queue.Full:
                    continue

    def __iter__(self):
        while True:
            yield self.q.get()

    def close(self):
        self.stop.set()
        while True:
            try:
                self.q.get_nowait()
            except queue.Empty:
                break
        self.thread.join(timeout=5)


class TinyUNet(nn.Module):
    def __init__(self, c=16):
        super().__init__()

        def cbr(cin, cout):
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)
            )

        self.d1 = cbr(1, c)
        self.d2 = cbr(c, 2 * c)
        self.mid = cbr(2 * c, 2 * c)
        self.u1 = cbr(4 * c, c)
        self.u0 = cbr(2 * c, c)
        self.out = nn.Conv2d(c, 2, 1)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(F.max_pool2d(a, 2))
        m = self.mid(F.max_pool2d(b, 2))
        u = self.u1(torch.cat([F.interpolate(m, scale_factor=2), b], 1))
        u = self.u0(torch.cat([F.interpolate(u, scale_factor=2), a], 1))
        return self.out(u)


def dice(logits, y):
    pred = logits.argmax(1)
    inter = ((pred == 1) & (y == 1)).sum().item()
    return 2 * inter / max(1, (pred == 1).sum().item() + (y == 1).sum().item())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--seed", type=int, default=43)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)

    model = TinyUNet()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loader = PrefetchLoader(args.batch, args.seed)

    t0 = time.time()
    losses, dices = [], []
    for step, (x, y) in enumerate(loader, start=1):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        dices.append(dice(logits.detach(), y))
        if step % 15 == 0:
            ms = (time.time() - t0) / step * 1e3
            print(
                f"step {step:4d}  loss {np.mean(losses):.4f}  dice {np.mean(dices):.3f}  "
                f"queue {loader.q.qsize()}/{loader.q.maxsize}  {ms:.0f} ms/step",
                flush=True,
            )
            losses.clear()
            dices.clear()
        if step >= args.steps:
            break

    loader.close()
    print(f"done; loader produced {loader.produced} batches")


if __name__ == "__main__":
    main()
