# expect: leak
# holder: pending|uploader
# pattern: background metrics thread drains an unbounded queue.Queue slower than the training loop fills it (backlog of numpy payloads)
# step_ms: 7
"""Small regression MLP with a fire-and-forget metrics uploader.

To keep the training loop fast, metrics are not sent inline: every step puts
a payload (scalar metrics plus a sample of the penultimate-layer activations
for the embedding projector) on ``MetricsUploader.pending``, a plain
``queue.Queue()``, and a daemon thread sends them to the tracking server.
Sending one payload takes ~40 ms (simulated here with a sleep; the real
server round trip was similar), but a training step takes ~7 ms. The thread
falls further behind every step and the unbounded queue holds an ever growing
backlog of payloads; nothing is lost, which is why nobody noticed.

Fix: ``queue.Queue(maxsize=...)`` with ``put_nowait`` and drop (or coalesce)
when full, batch the uploads, or only log activations every N steps.
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


class MetricsUploader(threading.Thread):
    def __init__(self, run_name, latency_s=0.04):
        super().__init__(name="metrics-uploader", daemon=True)
        self.run_name = run_name
        self.latency_s = latency_s
        self.pending = queue.Queue()
        self.sent = 0
        self.last_sent_step = -1

    def log(self, step, **payload):
        payload["step"] = step
        payload["run"] = self.run_name
        self.pending.put(payload)

    def _send(self, payload):
        # stand-in for an HTTPS POST to the tracking server
        time.sleep(self.latency_s)
        self.last_sent_step = payload["step"]

    def run(self):
        while True:
            payload = self.pending.get()
            if payload is None:
                return
            self._send(payload)
            self.sent += 1


class Regressor(nn.Module):
    def __init__(self, d_in=32, hidden=384):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(d_in, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU()
        )
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.body(x)
        return self.head(h).squeeze(-1), h


def make_problem(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, generator=g)
    y = torch.sin(x @ w / d**0.5) + 0.1 * x[:, 0] ** 2 + 0.05 * torch.randn(n, generator=g)
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)

    x_all, y_all = make_problem(50_000, 32, args.seed)
    model = Regressor()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)

    uploader = MetricsUploader(run_name=f"mlp-reg-seed{args.seed}")
    uploader.start()

    t0 = time.time()
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, x_all.shape[0], (args.batch,))
        pred, h = model(x_all[idx])
        loss = F.mse_loss(pred, y_all[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()

        uploader.log(
            step,
            loss=loss.item(),
            grad_norm=gnorm.item(),
            lr=sched.get_last_lr()[0],
            embeddings=h[:16].detach().numpy().copy(),
            targets=y_all[idx][:16].numpy().copy(),
        )

        if step % 250 == 0:
            ms = (time.time() - t0) / step * 1e3
            print(
                f"step {step:5d}  mse {loss.item():.4f}  sent {uploader.sent}  "
                f"(last sent step {uploader.last_sent_step})  {ms:.1f} ms/step",
                flush=True,
            )

    print(f"training done; {uploader.pending.qsize()} metric payloads still waiting to upload")


if __name__ == "__main__":
    main()
