# expect: no_leak
# pattern: truncated BPTT: LSTM (h, c) carried across chunks but detached every chunk; recent losses in a deque(maxlen=200); a logging closure captures only floats
# step_ms: 20
"""Multi-step forecasting of a long synthetic multivariate series with an LSTM and truncated BPTT.

The recurrent state is carried from one 64-step chunk to the next (so the model
sees the whole stream) but is detached at every chunk boundary, so each chunk's
graph is freed after backward().  Recent losses live in a deque(maxlen=200)
and the logging callback closes over floats only.  Memory is flat.
"""
import math
import time
from collections import deque

import torch
import torch.nn as nn
import torch.nn.functional as F


def long_series(n_steps, n_series=32, n_vars=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(n_steps, dtype=torch.float32)
    periods = torch.randint(20, 200, (n_series, n_vars, 1), generator=g).float()
    phase = torch.rand(n_series, n_vars, 1, generator=g) * 2 * math.pi
    trend = torch.randn(n_series, n_vars, 1, generator=g) * 1e-4
    x = torch.sin(2 * math.pi * t / periods + phase) + trend * t
    x = x + 0.1 * torch.randn(x.shape, generator=g)
    return x.permute(0, 2, 1).contiguous()  # (series, time, vars)


def chunks(series, chunk_len, horizon):
    T = series.shape[1]
    for start in range(0, T - chunk_len - horizon, chunk_len):
        x = series[:, start:start + chunk_len]
        y = torch.stack([series[:, start + k + 1:start + chunk_len + k + 1] for k in range(horizon)], dim=-1)
        yield x, y


class Forecaster(nn.Module):
    def __init__(self, n_vars=4, hidden=96, horizon=4):
        super().__init__()
        self.lstm = nn.LSTM(n_vars, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, n_vars * horizon)
        self.n_vars, self.horizon = n_vars, horizon

    def forward(self, x, state=None):
        h, state = self.lstm(x, state)
        out = self.head(h).view(x.shape[0], x.shape[1], self.n_vars, self.horizon)
        return out, state


def make_logger(every):
    last = {"t": time.time()}

    def log(chunk_idx, loss_value, window):
        if time.time() - last["t"] > every:
            print(f"chunk {chunk_idx:4d}  loss {loss_value:.4f}  avg(200) {sum(window) / len(window):.4f}", flush=True)
            last["t"] = time.time()
    return log


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    horizon, chunk_len = 4, 64
    series = long_series(64 * 600 + 8)
    model = Forecaster(horizon=horizon)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    window = deque(maxlen=200)
    log = make_logger(every=3.0)
    state = None
    t0 = time.time()
    for i, (x, y) in enumerate(chunks(series, chunk_len, horizon)):
        pred, state = model(x, state)
        state = tuple(s.detach() for s in state)
        loss = F.mse_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        window.append(loss.item())
        log(i, window[-1], window)
    print(f"done {i + 1} chunks in {time.time() - t0:.1f}s, final avg loss {sum(window) / len(window):.4f}")


if __name__ == "__main__":
    main()
