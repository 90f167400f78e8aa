# expect: leak
# holder: run:inflight|InferenceWorker.run|inflight
# pattern: keyword-spotting inference worker (small 1D CNN over log-mel frames under torch.inference_mode with 4-shift test-time augmentation, no optimizer, ~24 ms per request of 4 clips, code in main() as the client + an InferenceWorker threading.Thread whose run() owns all worker state); for at-least-once delivery run() keeps every sent response in its local dict inflight[req.request_id] (int key) together with the request's feature tensor so it can re-send on NACK, and drops it when the client's text control line "ACK <id>" arrives; the parsed id is the str "1234", so inflight.pop(rid, None) never matches and every request's 4x40x160 float32 feature tensor (100 KB) stays in the worker thread's frame for the whole run
# step_ms: 24
"""Keyword-spotting inference worker with at-least-once delivery.

The client pushes batches of log-mel clips on a request queue.  A dedicated
worker thread scores them and keeps each response until the client confirms
receipt on the control channel (a line-based protocol: "ACK <id>" or
"NACK <id>"); a NACKed response is re-sent from the worker's in-flight table.
"""
import argparse
import queue
import threading
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

N_MELS = 40
FRAMES = 160
SHIFTS = (0, -6, 6, 12)
KEYWORDS = ["yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go", "_silence_", "_unknown_"]


class KWSNet(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(N_MELS, 256, 5, padding=2), nn.BatchNorm1d(256), nn.ReLU(),
            nn.Conv1d(256, 256, 5, padding=4, dilation=2), nn.BatchNorm1d(256), nn.ReLU(),
            nn.Conv1d(256, 256, 5, padding=8, dilation=4), nn.BatchNorm1d(256), nn.ReLU(),
            nn.MaxPool1d(2),
            nn.Conv1d(256, 128, 3, padding=1), nn.BatchNorm1d(128), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1),
        )
        self.fc = nn.Linear(128, n_classes)

    def forward(self, x):
        return self.fc(self.body(x).flatten(1))


@dataclass
class Request:
    request_id: int
    features: torch.Tensor


@dataclass
class Response:
    request_id: int
    probs: torch.Tensor
    attempt: int = 0


class InferenceWorker(threading.Thread):
    def __init__(self, model, requests, responses, control):
        super().__init__(name="kws-worker", daemon=True)
        self.model = model
        self.requests = requests
        self.responses = responses
        self.control = control
        self.stats = {}

    def _drain_control(self, inflight, counters):
        while True:
            try:
                line = self.control.get_nowait()
            except queue.Empty:
                return
            verb, rid = line.split()
            if verb == "ACK":
                if inflight.pop(rid, None) is not None:
                    counters["acked"] += 1
            elif verb == "NACK":
                entry = inflight.get(rid)
                if entry is not None:
                    req, resp = entry
                    resp.attempt += 1
                    self.responses.put(resp)
                    counters["resent"] += 1

    def run(self):
        inflight = {}
        counters = {"served": 0, "acked": 0, "resent": 0}
        while True:
            self._drain_control(inflight, counters)
            try:
                req = self.requests.get(timeout=0.05)
            except queue.Empty:
                continue
            if req is None:
                break
            with torch.inference_mode():
                # test-time augmentation: average over small time shifts
                x = req.features
                views = torch.cat([torch.roll(x, s, dims=2) for s in SHIFTS])
                probs = self.model(views).softmax(dim=1).view(len(SHIFTS), len(x), -1).mean(0)
            resp = Response(req.request_id, probs)
            inflight[req.request_id] = (req, resp)
            self.responses.put(resp)
            counters["served"] += 1
        self._drain_control(inflight, counters)
        counters["pending"] = len(inflight)
        self.stats = counters


def synth_clips(rng, n, keyword_idx):
    t = np.arange(FRAMES, dtype=np.float32)
    mel = np.arange(N_MELS, dtype=np.float32)[:, None]
    x = rng.normal(scale=0.5, size=(n, N_MELS, FRAMES)).astype(np.float32)
    for i in range(n):
        centre = 60 + 10 * keyword_idx[i]
        x[i] += np.exp(-((t - centre) ** 2) / 400.0) * np.exp(-((mel - 3 * keyword_idx[i]) ** 2) / 30.0)
    return torch.from_numpy(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=800, help="number of requests")
    ap.add_argument("--clips", type=int, default=4)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(11)

    model = KWSNet(len(KEYWORDS)).eval()
    requests, responses, control = queue.Queue(maxsize=8), queue.Queue(), queue.Queue()
    worker = InferenceWorker(model, requests, responses, control)
    worker.start()

    received = {}
    hits = 0
    t0 = time.time()
    for rid in range(1, args.steps + 1):
        kw = rng.integers(0, len(KEYWORDS), size=args.clips)
        requests.put(Request(rid, synth_clips(rng, args.clips, kw)))
        # client side: collect whatever responses have arrived and acknowledge them
        while True:
            try:
                resp = responses.get(timeout=0.2 if rid == args.steps else 0.0)
            except queue.Empty:
                break
            if rng.random() < 0.02 and resp.attempt == 0:
                control.put(f"NACK {resp.request_id}")  # simulated corrupt frame
                continue
            received[resp.request_id] = resp.probs.argmax(dim=1).tolist()
            control.put(f"ACK {resp.request_id}")
            hits += 1
            del resp
        if rid % 150 == 0:
            print(f"request {rid:5d}  answered {len(received)}  {time.time() - t0:.1f}s", flush=True)
        if len(received) > 256:
            received.clear()
    requests.put(None)
    worker.join()
    print(f"worker stats: {worker.stats}")


if __name__ == "__main__":
    main()
