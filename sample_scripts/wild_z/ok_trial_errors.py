# expect: no_leak
# holder:
# pattern: random-search hyper-parameter driver for MLP regressors on a synthetic tabular task (torch, each trial builds a fresh model and a torch.optim.SGD or Adam and trains up to 120 mini-batch steps; one step = one trial, ~250 ms, code in main() + run_trial() + a FailureLog and a SearchDriver class). More than a quarter of the sampled configurations diverge (learning rate too high) and run_trial() raises TrialDiverged from deep inside the training loop, whose frames hold the model, the optimizer with its state, the current batch, activations and a list of recent gradient-norm tensors; the driver catches every exception and "keeps it for the post-mortem" in FailureLog, which looks like the classic exceptions-with-tracebacks pile-up. But FailureLog stores traceback.TracebackException.from_exception(exc) -- a summary with file/line/function names and the message as text, no frame or exception object -- in a dict keyed by (exception type, failing line) that only counts repeats after the first example, the `except ... as exc` name is unbound at the end of the handler, finished trials only leave a dict of floats in the results list, and the best model's state_dict is replaced rather than appended, so every trial's model, optimizer and frames are freed and memory is flat after the first trial (which is the largest configuration).
# step_ms: 250
"""Random hyper-parameter search with failure bookkeeping.

Every trial trains a fresh MLP for a fixed small budget; diverging trials
are aborted by raising TrialDiverged, and the driver keeps a digest of all
failures (with tracebacks) for the end-of-search report.
"""
import math
import os
import time
import traceback

import numpy as np
import psutil
import torch
import torch.nn as nn

N_TRIALS = 60
STEPS_PER_TRIAL = 120
BATCH = 256


def rss_mb():
    return psutil.Process(os.getpid()).memory_info().rss / 2**20


class TrialDiverged(RuntimeError):
    pass


def make_data(rng, n=8192, d=32):
    x = rng.normal(size=(n, d)).astype(np.float32)
    w = rng.normal(size=(d,)).astype(np.float32)
    y = np.sin(x @ w / 4) + 0.3 * x[:, 0] * x[:, 1] + 0.1 * rng.normal(size=n)
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))[:, None]


def build_model(width, depth, d_in=32):
    layers, d = [], d_in
    for _ in range(depth):
        layers += [nn.Linear(d, width), nn.SiLU()]
        d = width
    layers.append(nn.Linear(d, 1))
    return nn.Sequential(*layers)


def run_trial(cfg, x, y, gen):
    model = build_model(cfg["width"], cfg["depth"])
    if cfg["opt"] == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], weight_decay=cfg["wd"])
    else:
        opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9,
                              weight_decay=cfg["wd"])
    grad_norms = []
    for step in range(STEPS_PER_TRIAL):
        idx = torch.randint(0, len(x), (BATCH,), generator=gen)
        xb, yb = x[idx], y[idx]
        pred = model(xb)
        loss = torch.nn.functional.mse_loss(pred, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e6)
        grad_norms.append(gn)
        if not torch.isfinite(loss) or loss.item() > 1e4 or gn.item() > 1e5:
            raise TrialDiverged(f"loss {loss.item():.3g} grad-norm {gn.item():.3g} "
                                f"at step {step} (lr={cfg['lr']:.3g}, {cfg['opt']})")
        opt.step()
    with torch.no_grad():
        val = torch.nn.functional.mse_loss(model(x[-2048:]), y[-2048:]).item()
    return val, model


class FailureLog:
    """Digest of failures: one example traceback per (type, line), plus counts."""

    def __init__(self):
        self.examples = {}
        self.counts = {}

    def record(self, exc, cfg):
        tbe = traceback.TracebackException.from_exception(exc)
        last = tbe.stack[-1] if tbe.stack else None
        key = (type(exc).__name__, last.lineno if last else -1)
        self.counts[key] = self.counts.get(key, 0) + 1
        if key not in self.examples:
            self.examples[key] = (dict(cfg), tbe)

    def report(self):
        for key, n in sorted(self.counts.items(), key=lambda kv: -kv[1]):
            cfg, tbe = self.examples[key]
            print(f"{n:3d} x {key[0]} at line {key[1]}, e.g. {cfg}:")
            print("    " + "".join(tbe.format_exception_only()).strip())


class SearchDriver:
    def __init__(self, rng):
        self.rng = rng
        self.failures = FailureLog()
        self.results = []
        self.best = (math.inf, None, None)

    def sample(self, i):
        if i == 0:  # baseline: the default (and largest) configuration
            return dict(lr=3e-3, width=384, depth=4, wd=1e-4, opt="adam")
        r = self.rng
        return dict(lr=float(10 ** r.uniform(-4, 0.7)), width=int(r.choice([64, 128, 256, 384])),
                    depth=int(r.integers(2, 5)), wd=float(10 ** r.uniform(-6, -2)),
                    opt=str(r.choice(["adam", "sgd"])))

    def run(self, x, y, gen):
        t0 = time.perf_counter()
        print(f"{N_TRIALS} trials; rss at loop start {rss_mb():.1f} MB", flush=True)
        for i in range(N_TRIALS):
            cfg = self.sample(i)
            try:
                val, model = run_trial(cfg, x, y, gen)
            except Exception as exc:
                self.failures.record(exc, cfg)
                self.results.append(dict(cfg, status="diverged", val=math.nan))
            else:
                self.results.append(dict(cfg, status="ok", val=val))
                if val < self.best[0]:
                    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                    self.best = (val, dict(cfg), state)
                del model
            if (i + 1) % 10 == 0:
                el = time.perf_counter() - t0
                n_fail = sum(r["status"] == "diverged" for r in self.results)
                print(f"  trial {i + 1:3d}  best val {self.best[0]:.4f}  diverged {n_fail:2d}  "
                      f"{el / (i + 1) * 1e3:.0f} ms/trial  rss {rss_mb():.1f} MB", flush=True)
        print(f"loop done; rss at loop end {rss_mb():.1f} MB", flush=True)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(11)
    rng = np.random.default_rng(11)
    gen = torch.Generator().manual_seed(11)
    x, y = make_data(rng)
    driver = SearchDriver(rng)
    driver.run(x, y, gen)
    print(f"best: {driver.best[0]:.4f} with {driver.best[1]}")
    driver.failures.report()


if __name__ == "__main__":
    main()
