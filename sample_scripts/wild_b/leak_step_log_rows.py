# expect: leak
# holder: rows|StepLogger
# pattern: home-made "pandas-free" logger keeps a dict per step that includes numpy copies of the batch predictions/targets and per-layer grad norms; only scalars are written at the end
# step_ms: 4
"""Energy-consumption forecaster (1-D conv over sliding windows) with a tiny CSV logger.

``StepLogger.log`` appends one dict per optimisation step to ``self.rows``. Next
to the scalars it stores ``pred``/``target`` numpy arrays and a histogram "for
debugging", about 6 KB per step. The rows are only flushed to CSV at the very
end, so memory creeps up slowly for the whole run.
Fix: flush rows to disk every N steps, or only keep scalars.
"""
import csv
import io
import time
import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(11)
rng = np.random.default_rng(11)


class StepLogger:
    def __init__(self):
        self.rows = []

    def log(self, **fields):
        self.rows.append(fields)

    def to_csv(self, columns):
        buf = io.StringIO()
        wr = csv.writer(buf)
        wr.writerow(columns)
        for r in self.rows:
            wr.writerow([r[c] for c in columns])
        return buf.getvalue()


# synthetic hourly load: daily + weekly seasonality + noise
T = 24 * 365 * 3
t = np.arange(T)
load = (10 + 3 * np.sin(2 * np.pi * t / 24) + 1.5 * np.sin(2 * np.pi * t / (24 * 7))
        + 0.5 * rng.standard_normal(T)).astype(np.float32)
WIN, HORIZON = 168, 24

model = nn.Sequential(
    nn.Conv1d(1, 16, 7, padding=3), nn.ReLU(),
    nn.Conv1d(16, 16, 7, padding=3, stride=2), nn.ReLU(),
    nn.Flatten(), nn.Linear(16 * (WIN // 2), HORIZON),
)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2000)
logger = StepLogger()
BS = 32

t0 = time.time()
last = t0
step = 0
while time.time() - t0 < 16.0:
    starts = rng.integers(0, T - WIN - HORIZON, size=BS)
    xb = torch.from_numpy(np.stack([load[s:s + WIN] for s in starts])).unsqueeze(1)
    yb = torch.from_numpy(np.stack([load[s + WIN:s + WIN + HORIZON] for s in starts]))
    mu = xb.mean(dim=2, keepdim=True)
    pred = model(xb - mu) + mu.squeeze(1)
    loss = nn.functional.mse_loss(pred, yb)
    opt.zero_grad()
    loss.backward()
    grad_norms = np.array([p.grad.norm().item() for p in model.parameters()])
    opt.step()
    sched.step()
    p_np = pred.detach().numpy().copy()
    logger.log(step=step, loss=loss.item(), lr=sched.get_last_lr()[0],
               grad_norm=float(grad_norms.sum()), grad_norms=grad_norms,
               pred=p_np, target=yb.numpy().copy(),
               resid_hist=np.histogram(p_np - yb.numpy(), bins=32)[0])
    step += 1
    if time.time() - last > 4:
        last = time.time()
        print(f"step {step:5d} mse {np.mean([r['loss'] for r in logger.rows[-100:]]):.4f} ({time.time() - t0:.1f}s)")

text = logger.to_csv(["step", "loss", "lr", "grad_norm"])
print(f"{step} steps, {1000 * (time.time() - t0) / step:.1f} ms/step, csv {len(text) // 1024} KiB")
