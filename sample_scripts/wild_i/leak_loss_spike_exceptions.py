# expect: leak
# holder: skipped_batches
# pattern: train_step() raises LossSpike after the forward pass when the loss is far above its EMA (glitched sensor batches); the loop catches it and appends the exception object to skipped_batches for a post-mortem, and each exception's __traceback__ keeps the train_step frame alive with its locals x, hidden, pred and loss, i.e. the whole un-backpropagated autograd graph with its saved activations (~1 MB per skipped batch)
# step_ms: 13
"""Robust training for a sensor-to-setpoint regressor.

Some batches come from a sensor with a glitchy ADC whose targets are off
by orders of magnitude.  Rather than let those batches blow up Adam's
moment estimates, ``train_step`` checks the loss against an exponential
moving average *before* calling backward and raises ``LossSpike``.  The
loop skips the batch and keeps the exception so the skipped batches can be
summarized at the end (how many, which steps, how big the spikes were).
"""
import time

import torch
import torch.nn.functional as F
from torch import nn

torch.set_num_threads(1)
torch.manual_seed(0)

IN_DIM = 96
HIDDEN = 512
BATCH = 128
N_STEPS = 1400
SPIKE_FACTOR = 20.0


class LossSpike(RuntimeError):
    def __init__(self, step, value, ema):
        super().__init__(f"step {step}: loss {value:.3g} vs ema {ema:.3g}")
        self.step = step
        self.value = value
        self.ema = ema


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(IN_DIM, HIDDEN), nn.SiLU(),
            nn.Linear(HIDDEN, HIDDEN), nn.SiLU(),
            nn.Linear(HIDDEN, HIDDEN), nn.SiLU(),
        )
        self.head = nn.Linear(HIDDEN, 4)

    def forward(self, x):
        hidden = self.encoder(x)
        return self.head(hidden), hidden


class SensorStream:
    def __init__(self, seed=0, glitch_rate=0.02):
        self.g = torch.Generator().manual_seed(seed)
        self.w = torch.randn(IN_DIM, 4, generator=self.g) / IN_DIM ** 0.5
        self.glitch_rate = glitch_rate

    def next_batch(self, step):
        x = torch.randn(BATCH, IN_DIM, generator=self.g)
        y = torch.tanh(x @ self.w) + 0.05 * torch.randn(BATCH, 4, generator=self.g)
        if step > 10 and torch.rand(1, generator=self.g).item() < self.glitch_rate:
            y = y * 300.0 + 50.0
        return x, y


def train_step(model, opt, x, y, step, ema):
    pred, hidden = model(x)
    loss = F.mse_loss(pred, y) + 1e-4 * hidden.pow(2).mean()
    value = loss.item()
    if ema is not None and value > SPIKE_FACTOR * ema:
        raise LossSpike(step, value, ema)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return value


def main():
    model = Regressor()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    stream = SensorStream()
    skipped_batches = []
    ema = None
    t0 = time.time()
    last_print = t0
    for step in range(N_STEPS):
        x, y = stream.next_batch(step)
        try:
            value = train_step(model, opt, x, y, step, ema)
        except LossSpike as err:
            skipped_batches.append(err)
            continue
        ema = value if ema is None else 0.95 * ema + 0.05 * value
        now = time.time()
        if now - last_print > 1.0:
            last_print = now
            print(f"step {step:4d} loss {value:.4f} ema {ema:.4f} "
                  f"skipped {len(skipped_batches)} ({now - t0:.1f}s)", flush=True)

    if skipped_batches:
        worst = max(skipped_batches, key=lambda e: e.value / e.ema)
        print(f"skipped {len(skipped_batches)} batches; worst: {worst}")
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
