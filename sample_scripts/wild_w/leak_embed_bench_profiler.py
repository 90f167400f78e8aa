# expect: leak
# holder: CallProfiler.records|profiler.records|CallProfiler
# pattern: latency benchmark of a thumbnail-embedding service (small CNN under torch.inference_mode, no optimizer, no training, ~17 ms per dynamically sized request batch, code in main() + a CallProfiler class + plain stage functions); per-stage latencies are collected with a home-made profiler installed through sys.setprofile, which on every "return" event of a watched stage function (decode_batch, normalize_pixels, embed, l2_normalize, pack_response) appends a CallRecord(name, seconds, result) to self.records so that report() can split the latencies by output shape; the profiler stores the returned object itself (`arg` of the return event) instead of its shape, so every request's decoded uint8 images, normalised float32 batch, embeddings and packed response stay alive in profiler.records for the whole run
# step_ms: 17
"""Offline latency benchmark for the thumbnail embedding service.

Replays a synthetic request trace (dynamic batch sizes between 4 and 16
thumbnails) through the same stage functions the service uses:

    decode_batch -> normalize_pixels -> embed -> l2_normalize -> pack_response

The per-stage timings come from a tiny sys.setprofile based profiler rather
than manual timers so the stage functions stay exactly as they are in
production.  At the end we print p50/p95 per stage, broken down by the output
shape of each stage (the batch size matters a lot for the CNN).

Usage:  python embed_bench_profiler.py [--steps 1000] [--img 40]
"""
import argparse
import collections
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


CallRecord = collections.namedtuple("CallRecord", "name seconds result")


class CallProfiler:
    """Times calls of selected functions via sys.setprofile."""

    def __init__(self, watch):
        self.watch = frozenset(watch)
        self._open = []
        self.records = []

    def _hook(self, frame, event, arg):
        if event == "call":
            name = frame.f_code.co_name
            if name in self.watch:
                self._open.append((name, id(frame), time.perf_counter()))
        elif event == "return":
            if self._open and self._open[-1][1] == id(frame):
                name, _, t0 = self._open.pop()
                # keep the result so report() can bucket by output shape
                self.records.append(CallRecord(name, time.perf_counter() - t0, arg))

    def __enter__(self):
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc):
        sys.setprofile(None)
        return False

    @staticmethod
    def _shape(obj):
        if hasattr(obj, "shape"):
            return tuple(obj.shape)
        if isinstance(obj, dict):
            return ("dict", len(obj.get("ids", ())))
        return (type(obj).__name__,)

    def report(self):
        by_stage = collections.defaultdict(list)
        by_shape = collections.defaultdict(list)
        for rec in self.records:
            by_stage[rec.name].append(rec.seconds)
            by_shape[(rec.name, self._shape(rec.result)[:1])].append(rec.seconds)
        lines = []
        for name, ts in by_stage.items():
            ts = np.asarray(ts) * 1e3
            lines.append(f"  {name:16s} n={len(ts):5d}  p50={np.percentile(ts, 50):7.2f} ms  "
                         f"p95={np.percentile(ts, 95):7.2f} ms")
        slow = sorted(by_shape.items(), key=lambda kv: -np.median(kv[1]))[:4]
        for (name, shp), ts in slow:
            lines.append(f"  slowest bucket {name}{list(shp)}: median {np.median(ts) * 1e3:.2f} ms")
        return "\n".join(lines)


class ThumbEncoder(nn.Module):
    def __init__(self, dim=256):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU())
        self.body = nn.Sequential(
            nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
            nn.Conv2d(128, 192, 3, stride=2, padding=1), nn.BatchNorm2d(192), nn.ReLU(),
            nn.Conv2d(192, 256, 3, padding=1), nn.BatchNorm2d(256), nn.ReLU(),
        )
        self.head = nn.Linear(256, dim)

    def forward(self, x):
        h = self.body(self.stem(x))
        return self.head(h.mean(dim=(2, 3)))


# ---------------------------------------------------------------- stages ----
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def decode_batch(request, img):
    """Stand-in for JPEG decoding: procedural thumbnails from the request ids."""
    n = len(request["ids"])
    rng = np.random.default_rng(request["seed"])
    yy, xx = np.mgrid[0:img, 0:img].astype(np.float32) / img
    freq = rng.uniform(2, 9, size=(n, 3, 1, 1)).astype(np.float32)
    phase = rng.uniform(0, 6.28, size=(n, 3, 1, 1)).astype(np.float32)
    waves = np.sin(freq * (xx + yy * rng.uniform(-1, 1, size=(n, 1, 1, 1))) * 6.28 + phase)
    noise = rng.normal(0, 0.15, size=(n, 3, img, img)).astype(np.float32)
    pix = np.clip((waves * 0.5 + 0.5 + noise) * 255, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(pix.transpose(0, 2, 3, 1))      # NHWC like a decoder


def normalize_pixels(pixels):
    x = torch.from_numpy(pixels).permute(0, 3, 1, 2).float().div_(255.0)
    return ((x - MEAN) / STD).contiguous()


def embed(model, x):
    with torch.inference_mode():
        return model(x)


def l2_normalize(z):
    return F.normalize(z, dim=1)


def pack_response(request, z):
    return {"ids": request["ids"], "emb": z.to(torch.float16).numpy().tobytes(), "dim": z.shape[1]}


def handle(model, request, img):
    pixels = decode_batch(request, img)
    x = normalize_pixels(pixels)
    z = embed(model, x)
    z = l2_normalize(z)
    return pack_response(request, z)


def request_trace(n, seed=0):
    rng = np.random.default_rng(seed)
    next_id = 0
    for i in range(n):
        b = int(rng.integers(4, 17))
        ids = list(range(next_id, next_id + b))
        next_id += b
        yield {"ids": ids, "seed": int(rng.integers(1 << 31)), "t": i}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=1000, help="number of request batches to replay")
    ap.add_argument("--img", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()

    torch.set_num_threads(1)          # one worker per core in production
    torch.manual_seed(0)
    model = ThumbEncoder().eval()

    for req in request_trace(args.warmup, seed=123):          # warm-up, not profiled
        handle(model, req, args.img)

    t0 = time.time()
    served = 0
    with CallProfiler(["decode_batch", "normalize_pixels", "embed", "l2_normalize", "pack_response"]) as prof:
        for step, req in enumerate(request_trace(args.steps, seed=1)):
            resp = handle(model, req, args.img)
            served += len(resp["ids"])
            if step % 150 == 0:
                el = time.time() - t0
                print(f"[{el:6.1f}s] batch {step:4d}  thumbnails={served:6d}  "
                      f"{served / max(el, 1e-6):7.1f} img/s", flush=True)

    print(f"replayed {args.steps} batches / {served} thumbnails in {time.time() - t0:.1f}s")
    print(prof.report())


if __name__ == "__main__":
    main()
