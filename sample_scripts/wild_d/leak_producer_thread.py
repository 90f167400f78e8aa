# expect: leak
# holder: backlog
# pattern: background sensor thread appends windows to an unbounded shared list faster than the inference consumer pops them one at a time
# step_ms: 2
"""Streaming anomaly detection with a background reader thread.

A daemon thread simulates two sensors: every couple of milliseconds it reads
one window from each sensor and appends it to ``backlog`` (a list guarded by a
lock).  The main thread pops windows one by one, scores them with a small
convolutional autoencoder under ``torch.no_grad()`` and "publishes" the score
(simulated with a short sleep standing in for a network write).

Why it leaks: the producer delivers windows ~1.7x faster than the consumer
handles them and ``backlog`` has no capacity limit, so unprocessed windows
pile up (a few KiB each) for as long as the service runs.

Fix: use ``queue.Queue(maxsize=...)`` so the producer blocks (or drops
windows when full), or consume in batches fast enough to keep up.
"""
import threading
import time

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)

N_SENSORS = 2
CHANNELS = 12
WINDOW = 48
N_WINDOWS = 9000

backlog = []
backlog_lock = threading.Lock()
stop = threading.Event()


def sensor_reader(seed=0):
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0, 2 * np.pi, size=(N_SENSORS, CHANNELS, 1))
    t = np.arange(WINDOW, dtype=np.float32)
    tick = 0
    while not stop.is_set():
        base = np.sin(0.15 * (t + tick * WINDOW) + phase).astype(np.float32)
        noise = rng.normal(scale=0.2, size=base.shape).astype(np.float32)
        frames = base + noise
        if rng.random() < 0.02:  # occasional glitch
            frames[rng.integers(N_SENSORS), :, rng.integers(WINDOW)] += 5.0
        with backlog_lock:
            for s in range(N_SENSORS):
                backlog.append({"sensor": s, "tick": tick, "ts": time.time(), "x": frames[s].copy()})
        tick += 1
        time.sleep(0.002)


class ConvAE(nn.Module):
    def __init__(self, c=CHANNELS):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv1d(c, 32, 5, padding=2), nn.ReLU(),
                                 nn.Conv1d(32, 16, 5, stride=2, padding=2), nn.ReLU())
        self.dec = nn.Sequential(nn.ConvTranspose1d(16, 32, 4, stride=2, padding=1), nn.ReLU(),
                                 nn.Conv1d(32, c, 5, padding=2))

    def forward(self, x):
        return self.dec(self.enc(x))


def publish(record, score):
    time.sleep(0.0015)  # stand-in for an HTTP call to the alerting service


def main():
    model = ConvAE().eval()
    reader = threading.Thread(target=sensor_reader, name="sensor-reader", daemon=True)
    reader.start()

    processed, alerts = 0, 0
    mean, var = None, 1.0
    t0 = time.time()
    with torch.no_grad():
        while processed < N_WINDOWS:
            with backlog_lock:
                rec = backlog.pop(0) if backlog else None
            if rec is None:
                time.sleep(0.0005)
                continue
            x = torch.from_numpy(rec["x"]).unsqueeze(0)
            score = float(((model(x) - x) ** 2).mean())
            if mean is None:
                mean = score
            z = (score - mean) / (var ** 0.5 + 1e-6)
            if processed > 200 and z > 4.0:
                alerts += 1
            mean = 0.99 * mean + 0.01 * score
            var = 0.99 * var + 0.01 * (score - mean) ** 2
            publish(rec, score)
            processed += 1
            if processed % 1500 == 0:
                lag = time.time() - rec["ts"]
                print(f"[{time.time() - t0:5.1f}s] processed {processed}  backlog={len(backlog)}  "
                      f"lag={lag:.2f}s  alerts={alerts}")

    stop.set()
    reader.join(timeout=2)
    print(f"stopped with {len(backlog)} windows still queued")


if __name__ == "__main__":
    main()
