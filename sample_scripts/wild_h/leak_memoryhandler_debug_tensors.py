# expect: leak
# holder: buffer|crash_buffer|handlers
# pattern: GRU forecaster training loop logs log.debug("... %s", h_n[0, :2].detach()) and the worst window x[worst, -8:, 0] / pred[worst] every step; a logging.handlers.MemoryHandler(capacity=2000, target=None) is attached as a "flight recorder" whose target is only set when the loss goes non-finite, but MemoryHandler.flush() only clears self.buffer when a target exists, so the buffer grows forever and each record's args keep a view of the full (batch x hidden) hidden-state storage and the whole batch window tensor (Adam)
# step_ms: 35
"""Multi-step load forecasting with a GRU encoder and a linear decoder.

The data are synthetic "electricity load" series: daily and weekly
seasonality, a slow trend, a few regime changes and noise.  The model reads
a 48-step window and predicts the next 24 steps.

Logging: INFO goes to stdout.  DEBUG records (hidden-state snapshots, the worst
window of each batch and gradient norms) go into a ``MemoryHandler`` used as a flight recorder: we
only want them written out if training blows up, so the handler gets a file
target in the divergence branch, dumps what it holds, and the run aborts.
"""
import logging
import logging.handlers
import math
import time

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(0)
np.random.seed(0)

log = logging.getLogger("forecast")
log.setLevel(logging.DEBUG)
_console = logging.StreamHandler()
_console.setLevel(logging.INFO)
_console.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
log.addHandler(_console)
crash_buffer = logging.handlers.MemoryHandler(capacity=2000, flushLevel=logging.CRITICAL, target=None)
log.addHandler(crash_buffer)

WINDOW, HORIZON = 48, 24
BATCH = 64
HIDDEN = 96
STEPS = 550


def synth_load(n_series=64, length=24 * 7 * 40):
    t = np.arange(length, dtype=np.float32)
    out = []
    for _ in range(n_series):
        base = 50 + 20 * np.random.rand()
        daily = (8 + 4 * np.random.rand()) * np.sin(2 * np.pi * t / 24 + np.random.rand() * 6)
        weekly = (5 + 3 * np.random.rand()) * np.sin(2 * np.pi * t / (24 * 7))
        trend = np.cumsum(np.random.randn(length).astype(np.float32)) * 0.05
        regime = np.zeros(length, dtype=np.float32)
        for c in np.random.randint(0, length, size=3):
            regime[c:] += np.random.randn() * 6
        noise = np.random.randn(length).astype(np.float32) * 2
        out.append(base + daily + weekly + trend + regime + noise)
    s = np.stack(out)
    s = (s - s.mean(1, keepdims=True)) / s.std(1, keepdims=True)
    return torch.from_numpy(s.astype(np.float32))


def sample_batch(series, batch):
    i = torch.randint(0, series.shape[0], (batch,))
    j = torch.randint(0, series.shape[1] - WINDOW - HORIZON, (batch,))
    offs = torch.arange(WINDOW + HORIZON)
    w = series[i[:, None], j[:, None] + offs]
    return w[:, :WINDOW, None], w[:, WINDOW:]


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(1, HIDDEN, batch_first=True)
        self.head = nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, HORIZON))

    def forward(self, x):
        _, h_n = self.gru(x)
        return self.head(h_n[0]), h_n


def main():
    series = synth_load()
    model = Forecaster()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=4e-3, total_steps=STEPS)
    t0 = time.time()
    running = None
    for step in range(STEPS):
        x, y = sample_batch(series, BATCH)
        pred, h_n = model(x)
        per_sample = nn.functional.smooth_l1_loss(pred, y, reduction="none").mean(1)
        loss = per_sample.mean()
        if not torch.isfinite(loss):
            crash_buffer.setTarget(logging.FileHandler("/tmp/forecast_crash_debug.log"))
            crash_buffer.flush()
            raise RuntimeError(f"non-finite loss at step {step}")
        opt.zero_grad()
        loss.backward()
        gnorm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()

        log.debug("step %d hidden[:2] %s", step, h_n[0, :2].detach())
        worst = int(per_sample.argmax())
        log.debug("step %d worst window %s pred %s", step, x[worst, -8:, 0], pred[worst].detach())
        log.debug("step %d grad_norm %.4f lr %.2e", step, gnorm.item(), sched.get_last_lr()[0])

        running = loss.item() if running is None else 0.95 * running + 0.05 * loss.item()
        if step % 50 == 0 or step == STEPS - 1:
            log.info("step %4d  loss %.4f  grad %.3f  lr %.2e  (%.1fs)",
                     step, running, gnorm.item(), sched.get_last_lr()[0], time.time() - t0)

    # quick holdout check on the last 10% of each series
    with torch.no_grad():
        tail = series[:, -(WINDOW + HORIZON) * 4:]
        x, y = sample_batch(tail, 512)
        mae = (model(x)[0] - y).abs().mean().item()
        naive = (x[:, -1] - y).abs().mean().item()
    log.info("holdout MAE %.4f (last-value baseline %.4f)", mae, naive)


if __name__ == "__main__":
    main()
