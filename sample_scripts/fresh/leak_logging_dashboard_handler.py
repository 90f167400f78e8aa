# expect: leak
# holder: records|DashboardHandler
# pattern: custom logging.Handler buffers every LogRecord until the end of the run; per-step debug records carry numpy arrays in extra=
# step_ms: 1
"""Tiny MNIST-sized MLP on synthetic digits-like blobs, with structured
logging to an experiment dashboard.

The project logs through the standard ``logging`` module. ``DashboardHandler``
collects records and "flushes them to the dashboard in one request at the end
of training" (rate limits). The per-step record is a DEBUG message with the
interesting bits in ``extra=``: per-layer gradient norms and a numpy copy of
the first rows of logits and penultimate features for the calibration
and embedding plots. The console handler is at
INFO so the terminal stays quiet, but the dashboard handler is at DEBUG and
its ``self.records`` list keeps every record, including the arrays, for the
whole run.

Fix: flush every N records (or on a timer) and clear the buffer, use
``logging.handlers.MemoryHandler`` with a sane capacity and a target, and
don't put arrays in log records.
"""

import argparse
import logging
import random
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger("train")


class DashboardHandler(logging.Handler):
    def __init__(self, run_id, level=logging.DEBUG):
        super().__init__(level)
        self.run_id = run_id
        self.records = []

    def emit(self, record):
        self.records.append(record)

    def flush_to_dashboard(self):
        # stand-in for a single bulk POST
        n_arrays = sum(1 for r in self.records if hasattr(r, "logits_sample"))
        print(
            f"[dashboard] uploading {len(self.records)} records ({n_arrays} with arrays) for run {self.run_id}"
        )


def setup_logging(run_id):
    log.setLevel(logging.DEBUG)
    console = logging.StreamHandler(sys.stdout)
    console.setLevel(logging.INFO)
    console.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
    dash = DashboardHandler(run_id)
    log.addHandler(console)
    log.addHandler(dash)
    log.propagate = False
    return dash


def make_blobs(n, d, k, seed):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(k, d, generator=g) * 0.25
    y = torch.randint(0, k, (n,), generator=g)
    x = centers[y] + torch.randn(n, d, generator=g)
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=14000)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)
    dash = setup_logging(run_id=f"mlp-blobs-{args.seed}")

    x_all, y_all = make_blobs(20_000, 64, 10, args.seed)
    body = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU())
    head = nn.Linear(128, 10)
    model = nn.Sequential(body, head)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    t0 = time.time()
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, x_all.shape[0], (args.batch,))
        feats = body(x_all[idx])
        logits = head(feats)
        loss = F.cross_entropy(logits, y_all[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norms = {name: p.grad.norm().item() for name, p in model.named_parameters()}
        opt.step()

        log.debug(
            "step %d loss %.4f",
            step,
            loss.item(),
            extra={
                "step": step,
                "grad_norms": grad_norms,
                "logits_sample": logits[:32].detach().numpy().copy(),
                "features_sample": feats[:8].detach().numpy().copy(),
                "labels_sample": y_all[idx][:32].numpy().copy(),
            },
        )
        if step % 1000 == 0:
            ms = (time.time() - t0) / step * 1e3
            log.info("step %d  loss %.4f  %.2f ms/step", step, loss.item(), ms)

    dash.flush_to_dashboard()


if __name__ == "__main__":
    main()
