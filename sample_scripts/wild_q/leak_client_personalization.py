# expect: leak
# holder: p.grad|param.grad|personal
# pattern: per-patient personalisation of a glucose forecaster in a federated simulation: for every patient a copy.deepcopy of the global MLP is fine-tuned for a few torch.optim.SGD steps with a gradient-norm (flat-minimum) penalty implemented as loss.backward(create_graph=True) followed by penalty.backward() on the p.grad terms; after the last step each parameter's .grad still carries the autograd graph that points back (through AccumulateGrad) to the parameter itself, a reference cycle inside the autograd engine that Python's GC cannot see, so when personalise() returns and the personalised model goes out of scope its parameters, graph-carrying gradients and graph nodes are never freed; about half a megabyte (one small model plus its graph) is lost per patient for the whole run
# step_ms: 47
"""Federated personalisation of a continuous-glucose-monitor (CGM) forecaster.

A global MLP predicts the next 60 min of glucose (12 x 5-min samples) from
the last 2 h of CGM readings plus carbohydrate and insulin events.  Each
simulated round, a cohort of patients downloads the global model, fine-
tunes it locally for a few SGD steps on their own recent data (with a
gradient-norm penalty that favours flat minima and generalises better to
the patient's next days), reports held-out RMSE, and uploads the weight
delta.  The server averages the deltas (FedAvg) into the global model.
Patients differ in insulin sensitivity, carb ratio, meal habits and
sensor noise, so personalisation helps noticeably.
"""
import argparse
import copy
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore", category=UserWarning)

HIST = 24     # 2 h of 5-min samples
HORIZON = 12  # 1 h ahead


class Patient:
    def __init__(self, pid, rng):
        self.pid = pid
        self.isf = rng.uniform(1.5, 4.0)        # mg/dL drop per insulin unit (x10)
        self.carb = rng.uniform(2.0, 5.0)       # mg/dL rise per gram (x0.1)
        self.basal = rng.uniform(90, 150)
        self.noise = rng.uniform(3, 12)
        self.meal_times = np.sort(rng.uniform(0, 288, rng.integers(3, 6)))
        self.rng = np.random.default_rng(rng.integers(1 << 31))

    def simulate_day(self):
        r = self.rng
        n = 288
        carbs = np.zeros(n)
        insulin = np.zeros(n)
        for mt in self.meal_times + r.normal(0, 6, len(self.meal_times)):
            i = int(np.clip(mt, 0, n - 1))
            g = r.uniform(20, 90)
            carbs[i] += g
            insulin[max(i - 2, 0)] += g / r.uniform(8, 14)
        k = np.arange(48)
        carb_kernel = (k / 9.0) * np.exp(1 - k / 9.0)
        ins_kernel = (k / 14.0) * np.exp(1 - k / 14.0)
        rise = np.convolve(carbs, carb_kernel)[:n] * self.carb * 0.1
        drop = np.convolve(insulin, ins_kernel)[:n] * self.isf * 10
        drift = np.cumsum(r.normal(0, 0.8, n))
        glucose = self.basal + rise - drop + drift
        cgm = np.clip(glucose + r.normal(0, self.noise, n), 40, 400)  # sensor range
        return cgm, carbs, insulin

    def windows(self, days):
        xs, ys = [], []
        for _ in range(days):
            g, c, ins = self.simulate_day()
            for t in range(HIST, 288 - HORIZON, 3):
                hist = np.concatenate([(g[t - HIST:t] - 120) / 40, c[t - HIST:t] / 50, ins[t - HIST:t] / 5])
                xs.append(hist)
                ys.append((g[t:t + HORIZON] - g[t - 1]) / 40)
        return torch.tensor(np.array(xs), dtype=torch.float32), torch.tensor(np.array(ys), dtype=torch.float32)


class Forecaster(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(3 * HIST, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, HORIZON),
        )

    def forward(self, x):
        return self.net(x)


def personalise(global_model, x, y, steps, lr, penalty, batch):
    personal = copy.deepcopy(global_model)
    opt = torch.optim.SGD(personal.parameters(), lr=lr, momentum=0.9)
    params = [p for p in personal.parameters()]
    for _ in range(steps):
        idx = torch.randint(0, len(x), (batch,))
        loss = F.mse_loss(personal(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward(create_graph=True)
        grad_norm2 = sum((p.grad ** 2).sum() for p in params)
        (penalty * grad_norm2).backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
    delta = [(p.detach() - q.detach()) for p, q in zip(params, global_model.parameters())]
    return personal, delta, loss.item()


@torch.no_grad()
def rmse_mgdl(model, x, y):
    return float(torch.sqrt(F.mse_loss(model(x), y))) * 40


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--cohort", type=int, default=10)
    p.add_argument("--population", type=int, default=400)
    p.add_argument("--local-steps", type=int, default=30)
    p.add_argument("--local-lr", type=float, default=0.005)
    p.add_argument("--penalty", type=float, default=0.05)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--server-lr", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)
    patients = [Patient(i, rng) for i in range(args.population)]
    global_model = Forecaster()

    # short centralised warm-up on a public cohort
    wx, wy = zip(*(pt.windows(1) for pt in patients[:20]))
    wx, wy = torch.cat(wx), torch.cat(wy)
    opt = torch.optim.Adam(global_model.parameters(), lr=2e-3)
    for _ in range(150):
        idx = torch.randint(0, len(wx), (256,))
        loss = F.mse_loss(global_model(wx[idx]), wy[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"warm-up RMSE {rmse_mgdl(global_model, wx, wy):.1f} mg/dL")

    t0 = time.perf_counter()
    served = 0
    for rnd in range(1, args.rounds + 1):
        cohort = rng.choice(args.population, args.cohort, replace=False)
        delta_sum = [torch.zeros_like(q) for q in global_model.parameters()]
        before, after = [], []
        for pid in cohort:
            pt = patients[pid]
            x, y = pt.windows(2)
            xt, yt = pt.windows(1)
            personal, delta, _ = personalise(global_model, x, y, args.local_steps, args.local_lr,
                                             args.penalty, args.batch)
            before.append(rmse_mgdl(global_model, xt, yt))
            after.append(rmse_mgdl(personal, xt, yt))
            for s, d in zip(delta_sum, delta):
                s += d
            served += 1
        with torch.no_grad():
            for q, s in zip(global_model.parameters(), delta_sum):
                q += args.server_lr * s / len(cohort)
        ms = (time.perf_counter() - t0) * 1000 / served
        print(f"round {rnd:3d}  global RMSE {np.mean(before):5.1f}  personalised {np.mean(after):5.1f} mg/dL  "
              f"({served} patients, {ms:.0f} ms/patient)", flush=True)


if __name__ == "__main__":
    main()
