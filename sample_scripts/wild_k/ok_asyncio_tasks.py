# expect: no_leak
# pattern: asyncio keyword-spotting service spawns one fire-and-forget task per request and keeps it in a background_tasks set (the documented idiom) with add_done_callback(background_tasks.discard); traffic arrives in bursts that ramp up over the first bursts, so tasks (each holding its 2 s clip) pile up behind a Semaphore and drain again; per-window results are flushed and cleared every 2 s
# step_ms: 4
"""In-process asyncio inference service for keyword spotting (no training).

A traffic generator submits bursts of 2-second audio clips; each request is
handled by its own task: simulated network read, log-mel features, a small
CNN under torch.inference_mode().  A flusher task aggregates detections per
2-second window and writes a summary line to a temporary file.
"""
import asyncio
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

SR, CLIP_S, N_KW = 16000, 2.0, 6
N_FFT, HOP, N_MELS = 400, 200, 40


def mel_filterbank(n_mels, n_fft, sr):
    f = np.linspace(0, sr / 2, n_fft // 2 + 1)
    mel = 2595 * np.log10(1 + f / 700)
    edges = np.linspace(mel.min(), mel.max(), n_mels + 2)
    fb = np.zeros((n_mels, f.size), np.float32)
    for m in range(n_mels):
        lo, c, hi = edges[m], edges[m + 1], edges[m + 2]
        fb[m] = np.clip(np.minimum((mel - lo) / (c - lo), (hi - mel) / (hi - c)), 0, None)
    return torch.from_numpy(fb)


class KWSNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(N_MELS, 64, 5, padding=2)
        self.c2 = nn.Conv1d(64, 64, 5, padding=2, dilation=1)
        self.out = nn.Linear(64, N_KW + 1)

    def forward(self, feats):
        h = F.relu(self.c1(feats))
        h = F.relu(self.c2(h))
        return self.out(h.amax(-1))


class KWSService:
    def __init__(self, out_path, max_concurrency=8, seed=0):
        self.model = KWSNet().eval()
        self.fb = mel_filterbank(N_MELS, N_FFT, SR)
        self.window = torch.hann_window(N_FFT)
        self.sem = asyncio.Semaphore(max_concurrency)
        self.background_tasks = set()
        self.window_results = []
        self.out_path = out_path
        self.rng = np.random.default_rng(seed)
        self.handled = 0
        self.peak_tasks = 0

    def submit(self, req_id, clip):
        task = asyncio.create_task(self.handle(req_id, clip))
        self.background_tasks.add(task)
        task.add_done_callback(self.background_tasks.discard)
        self.peak_tasks = max(self.peak_tasks, len(self.background_tasks))

    async def handle(self, req_id, clip):
        async with self.sem:
            await asyncio.sleep(float(self.rng.uniform(0.001, 0.004)))     # read from socket
            wav = torch.from_numpy(clip)
            with torch.inference_mode():
                spec = torch.stft(wav, N_FFT, HOP, window=self.window, return_complex=True).abs() ** 2
                feats = torch.log(self.fb @ spec + 1e-6)[None]
                probs = F.softmax(self.model(feats), -1)[0]
            kw = int(probs.argmax())
            self.window_results.append((req_id, kw, float(probs[kw])))
            self.handled += 1

    async def flusher(self, period=2.0):
        with open(self.out_path, "a") as fh:
            while True:
                await asyncio.sleep(period)
                batch, self.window_results = self.window_results, []
                if batch:
                    counts = np.bincount([kw for _, kw, _ in batch], minlength=N_KW + 1)
                    fh.write(f"{time.time():.1f} n={len(batch)} counts={counts.tolist()}\n")
                    fh.flush()


def synth_clip(rng):
    t = np.arange(int(SR * CLIP_S)) / SR
    clip = rng.normal(0, 0.05, t.size)
    if rng.random() < 0.7:
        f0 = rng.choice([400, 650, 900, 1200, 1600, 2100])
        start = rng.uniform(0.2, 1.2)
        env = np.exp(-((t - start - 0.3) ** 2) / 0.02)
        clip += env * np.sin(2 * np.pi * f0 * t * (1 + 0.2 * t))
    return clip.astype(np.float32)


async def traffic(service, rng, n_bursts=10, period=1.3):
    req_id = 0
    t0 = time.time()
    for b in range(n_bursts):
        size = min(80 + 70 * b, 360)               # traffic ramps up, then saturates
        for _ in range(size):
            req_id += 1
            service.submit(req_id, synth_clip(rng))
        await asyncio.sleep(0)
        print(f"burst {b + 1:2d}: +{size} requests, in flight {len(service.background_tasks):4d}, "
              f"handled {service.handled:5d}  {time.time() - t0:.1f}s", flush=True)
        await asyncio.sleep(period)
    while service.background_tasks:
        await asyncio.sleep(0.05)
    return req_id


async def main():
    torch.manual_seed(1)
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        service = KWSService(os.path.join(tmp, "detections.log"))
        flush_task = asyncio.create_task(service.flusher())
        t0 = time.time()
        n = await traffic(service, rng)
        await asyncio.sleep(2.1)
        flush_task.cancel()
        try:
            await flush_task
        except asyncio.CancelledError:
            pass
        with open(service.out_path) as fh:
            lines = fh.readlines()
        print(f"done: {n} requests, handled {service.handled}, peak in-flight tasks {service.peak_tasks}, "
              f"{len(lines)} summary lines, {time.time() - t0:.1f}s")


if __name__ == "__main__":
    asyncio.run(main())
