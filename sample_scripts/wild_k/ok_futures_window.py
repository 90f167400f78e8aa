# expect: no_leak
# pattern: thread-pool image pipeline with an autotuned prefetch depth: the number of in-flight futures doubles whenever the trainer had to wait (up to max_depth=16) and completed batches are delivered in order through a small reorder dict; each future is dropped as soon as its batch is handed out, so memory climbs while the depth ramps up and then holds
# step_ms: 55
"""Shape classification (circle / square / triangle / cross) on procedurally drawn images.

Fetching (simulated object-store latency), decoding and augmentation run in
a ThreadPoolExecutor.  An AutotunePrefetcher
keeps a window of submitted futures, deepening it while the training loop is
starved, and yields batches strictly in submission order.
"""
import time
from concurrent.futures import ThreadPoolExecutor, wait, FIRST_COMPLETED

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

IMG, CROP, BATCH, N_CLASSES = 80, 64, 64, 4
N_STEPS = 280


def draw_batch(batch_id, seed=1234):
    rng = np.random.default_rng((seed, batch_id))
    time.sleep(min(rng.lognormal(np.log(0.04), 0.9), 0.4))     # object-store fetch latency (simulated)
    yy, xx = np.mgrid[:IMG, :IMG]
    labels = rng.integers(0, N_CLASSES, BATCH)
    imgs = np.empty((BATCH, 3, CROP, CROP), np.float32)
    for i, lab in enumerate(labels):
        cx, cy = rng.uniform(25, 55, 2)
        r = rng.uniform(8, 18)
        if lab == 0:
            mask = (xx - cx) ** 2 + (yy - cy) ** 2 < r * r
        elif lab == 1:
            mask = (abs(xx - cx) < r) & (abs(yy - cy) < r)
        elif lab == 2:
            mask = (yy - cy < r) & (yy - cy > -r) & (abs(xx - cx) < (yy - cy + r) / 2)
        else:
            mask = ((abs(xx - cx) < r / 3) & (abs(yy - cy) < r)) | ((abs(yy - cy) < r / 3) & (abs(xx - cx) < r))
        bg = rng.uniform(0, 0.5, 3)[:, None, None]
        fg = rng.uniform(0.5, 1.0, 3)[:, None, None]
        img = np.where(mask[None], fg, bg) + rng.normal(0, 0.08, (3, IMG, IMG))
        ox, oy = rng.integers(0, IMG - CROP, 2)
        crop = img[:, oy:oy + CROP, ox:ox + CROP]
        if rng.random() < 0.5:
            crop = crop[:, :, ::-1]
        imgs[i] = crop
    mean = imgs.mean(axis=(0, 2, 3), keepdims=True)
    std = imgs.std(axis=(0, 2, 3), keepdims=True)
    return batch_id, torch.from_numpy((imgs - mean) / std), torch.from_numpy(labels)


class AutotunePrefetcher:
    def __init__(self, fn, n_batches, workers=4, start_depth=2, max_depth=16):
        self.fn, self.n_batches = fn, n_batches
        self.workers = workers
        self.depth, self.max_depth = start_depth, max_depth
        self.waits = 0

    def __enter__(self):
        self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="decode")
        return self

    def __exit__(self, *exc):
        self.pool.shutdown(wait=True, cancel_futures=True)
        return False

    def __iter__(self):
        pending, ready = set(), {}
        next_submit, next_yield = 0, 0
        last_tune = 0
        while next_yield < self.n_batches:
            while len(pending) + len(ready) < self.depth and next_submit < self.n_batches:
                pending.add(self.pool.submit(self.fn, next_submit))
                next_submit += 1
            t = time.perf_counter()
            while next_yield not in ready:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    bid, x, y = fut.result()
                    ready[bid] = (x, y)
            waited = time.perf_counter() - t
            if waited > 2e-3 and self.depth < self.max_depth and next_yield - last_tune >= 3:
                self.depth = min(self.depth * 2, self.max_depth)     # starved: prefetch deeper
                self.waits += 1
                last_tune = next_yield
            yield ready.pop(next_yield)
            next_yield += 1


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 5, stride=2, padding=2)
        self.c2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.c3 = nn.Conv2d(32, 64, 3, stride=2, padding=1)
        self.fc = nn.Linear(64, N_CLASSES)

    def forward(self, x):
        h = F.relu(self.c1(x))
        h = F.relu(self.c2(h))
        h = F.relu(self.c3(h))
        return self.fc(h.mean(dim=(2, 3)))


def main():
    torch.manual_seed(0)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=N_STEPS)
    t0 = time.time()
    correct = seen = 0
    with AutotunePrefetcher(draw_batch, n_batches=N_STEPS) as loader:
        for step, (x, y) in enumerate(loader, 1):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
            if step % 28 == 0:
                print(f"step {step:4d}  loss {loss.item():.3f}  acc {correct / seen:.3f}  "
                      f"prefetch depth {loader.depth:2d}  {time.time() - t0:.1f}s", flush=True)
                correct = seen = 0
    print(f"done: {N_STEPS} steps, final prefetch depth {loader.depth}, starved {loader.waits} times, "
          f"{time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
