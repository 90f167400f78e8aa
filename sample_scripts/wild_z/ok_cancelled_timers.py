# expect: no_leak
# holder:
# pattern: asyncio thumbnail/preview service for an image-labelling tool (PIL + NumPy, no torch; one step = one request: decode a JPEG/PNG upload, EXIF-transpose, letterbox-resize, unsharp-mask, compute a perceptual hash and encode a WEBP preview, ~4 ms, code in async main() + a ThumbnailService class with worker tasks fed by a bounded asyncio.Queue). It looks like a timer/handle pile-up: every request arms a 30 s SLA watchdog with loop.call_later(30.0, self._expire, req) -- longer than the whole run, so none ever fires -- whose arguments include the request with its upload bytes and decoded image, and requests are also registered in self._inflight. But the handle is cancelled in a finally block when the request finishes; TimerHandle.cancel() drops its callback and args at once (so the request is no longer referenced from the loop), cancelled handles leave the loop's _scheduled heap (popped when they reach its head, or in the bulk purge once they are more than half of it), _inflight entries are popped in the same finally, and the preview cache is an OrderedDict LRU capped at 256 entries, so memory is flat once the cache has filled (first ~10% of the run).
# step_ms: 4
"""Async preview service for an image-labelling tool.

Workers take upload requests from a bounded queue, produce a WEBP preview
plus a perceptual hash (for near-duplicate detection) and answer through
a future.  Every request has a 30 s SLA watchdog.
"""
import asyncio
import hashlib
import io
import os
import time
from collections import OrderedDict

import numpy as np
import psutil
from PIL import Image, ImageFilter, ImageOps

N_REQUESTS = 5800
N_WORKERS = 4
PREVIEW = (160, 160)


def rss_mb():
    return psutil.Process(os.getpid()).memory_info().rss / 2**20


def make_uploads(rng, n=48):
    """A pool of synthetic 'photos' (gradients, blobs, texture), JPEG/PNG encoded."""
    uploads = []
    for i in range(n):
        w, h = int(rng.integers(240, 480)), int(rng.integers(200, 420))
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        base = np.stack([xx / w, yy / h, 0.5 + 0.5 * np.sin(xx / 17 + yy / 23)], -1)
        for _ in range(6):
            cx, cy, r = rng.random() * w, rng.random() * h, rng.uniform(10, 60)
            blob = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r))
            base += blob[..., None] * rng.random(3)
        base += rng.normal(0, 0.05, size=base.shape)
        img = Image.fromarray((np.clip(base / base.max(), 0, 1) * 255).astype(np.uint8))
        buf = io.BytesIO()
        img.save(buf, format="JPEG" if i % 3 else "PNG", quality=90)
        uploads.append(buf.getvalue())
    return uploads


def dhash(img, size=8):
    g = np.asarray(img.convert("L").resize((size + 1, size), Image.BILINEAR), np.int16)
    bits = (g[:, 1:] > g[:, :-1]).flatten()
    return int("".join("1" if b else "0" for b in bits), 2)


class Request:
    def __init__(self, rid, payload, fut):
        self.rid = rid
        self.payload = payload
        self.future = fut
        self.image = None
        self.timer = None
        self.t0 = time.perf_counter()


class ThumbnailService:
    def __init__(self, loop, cache_size=256):
        self.loop = loop
        self.queue = asyncio.Queue(maxsize=32)
        self._inflight = {}
        self.cache = OrderedDict()
        self.cache_size = cache_size
        self.expired = 0
        self.done = 0
        self.busy = 0.0

    def _expire(self, req):
        self.expired += 1
        if not req.future.done():
            req.future.set_exception(TimeoutError(f"request {req.rid} missed its SLA"))

    def render(self, req):
        img = Image.open(io.BytesIO(req.payload))
        img = ImageOps.exif_transpose(img).convert("RGB")
        req.image = img
        prev = ImageOps.pad(img, PREVIEW, method=Image.BILINEAR, color=(20, 20, 20))
        prev = prev.filter(ImageFilter.UnsharpMask(radius=1.5, percent=80, threshold=2))
        out = io.BytesIO()
        prev.save(out, format="WEBP", quality=70, method=0)
        return out.getvalue(), dhash(img)

    async def worker(self):
        while True:
            req = await self.queue.get()
            if req is None:
                self.queue.task_done()
                return
            self._inflight[req.rid] = req
            req.timer = self.loop.call_later(30.0, self._expire, req)
            try:
                t0 = time.perf_counter()
                key = hashlib.blake2b(req.payload, digest_size=16).digest() + bytes([req.rid % 7])
                hit = self.cache.get(key)
                if hit is None:
                    hit = self.render(req)
                    self.cache[key] = hit
                    if len(self.cache) > self.cache_size:
                        self.cache.popitem(last=False)
                else:
                    self.cache.move_to_end(key)
                self.busy += time.perf_counter() - t0
                if not req.future.done():
                    req.future.set_result(hit)
                self.done += 1
            finally:
                req.timer.cancel()
                self._inflight.pop(req.rid, None)
                self.queue.task_done()
            await asyncio.sleep(0)


async def main():
    rng = np.random.default_rng(5150)
    uploads = make_uploads(rng)
    loop = asyncio.get_running_loop()
    svc = ThumbnailService(loop)
    workers = [asyncio.create_task(svc.worker()) for _ in range(N_WORKERS)]
    pending = []
    sizes = 0
    t0 = time.perf_counter()
    print(f"serving {N_REQUESTS} preview requests; rss at loop start {rss_mb():.1f} MB",
          flush=True)
    for rid in range(N_REQUESTS):
        payload = uploads[int(rng.integers(len(uploads)))]
        # clients re-upload slightly different bytes (metadata / re-encodes)
        payload = payload + rng.bytes(int(rng.integers(0, 64)))
        fut = loop.create_future()
        await svc.queue.put(Request(rid, payload, fut))
        pending.append(fut)
        if len(pending) >= 16:
            for f in pending:
                webp, _ = await f
                sizes += len(webp)
            pending.clear()
        if (rid + 1) % 600 == 0:
            el = time.perf_counter() - t0
            print(f"  req {rid + 1:5d}  {el / (rid + 1) * 1e3:.2f} ms/req  "
                  f"render {svc.busy / svc.done * 1e3:.2f} ms  timers in heap "
                  f"{len(loop._scheduled)}  preview bytes {sizes / 2**20:.1f} MB  "
                  f"rss {rss_mb():.1f} MB", flush=True)
    for f in pending:
        await f
    print(f"loop done; rss at loop end {rss_mb():.1f} MB", flush=True)
    for _ in workers:
        await svc.queue.put(None)
    await asyncio.gather(*workers)
    print(f"expired {svc.expired}, done {svc.done}")


if __name__ == "__main__":
    asyncio.run(main())
