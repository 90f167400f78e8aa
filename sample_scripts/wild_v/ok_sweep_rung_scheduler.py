# expect: no_leak
# holder:
# pattern: asynchronous hyper-parameter sweep service (population of MLP regressors, each trial trained in rungs of 48 steps with its own torch.optim.AdamW or SGD on a 2-thread ThreadPoolExecutor, ~170 ms per rung of throughput (~340 ms per rung per worker), code in main() + a RungScheduler class); suspicious-looking state: paused trials are torch.save()d (model + optimizer state) into io.BytesIO blobs kept in scheduler.paused, a heapq priority queue uses lazy deletion (paused trials culled by cull() when they fall into the bottom quartile of their level only have their heap entries marked REMOVED), every finished rung's Future is kept in a dict until it is collected, and new trials are sampled forever; but a killed trial's blob is deleted at once, the population is capped at max_live=12 (a new trial is only sampled when one is killed or finishes), the heap is rebuilt without the REMOVED entries whenever they are more than half of it, futures are popped as soon as they are done, and only floats per trial plus one best-state blob (replaced) are kept, so memory climbs while the first population fills and the allocator warms up (first ~20% of the run) and then stays flat within a small band
# step_ms: 170
"""Asynchronous successive-halving sweep.

Keeps a live population of trials.  The scheduler always resumes the
most promising paused trial for one more rung of training; trials that
fall behind the median of their budget level are stopped and replaced
by freshly sampled configurations.  Paused trials are checkpointed in
memory so that any of the workers can resume them.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import heapq
import io
import itertools
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
log = logging.getLogger("sweep")

REMOVED = "<removed>"
N_FEAT = 64


@dataclass
class TrialConfig:
    lr: float
    width: int
    depth: int
    weight_decay: float
    optimizer: str
    batch: int


@dataclass
class Trial:
    tid: int
    cfg: TrialConfig
    rungs: int = 0
    history: list = field(default_factory=list)   # val loss per rung (floats)


def build(cfg: TrialConfig) -> tuple[nn.Module, torch.optim.Optimizer]:
    layers, d = [], N_FEAT
    for _ in range(cfg.depth):
        layers += [nn.Linear(d, cfg.width), nn.SiLU()]
        d = cfg.width
    model = nn.Sequential(*layers, nn.Linear(d, 1))
    if cfg.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9, weight_decay=cfg.weight_decay)
    return model, opt


def run_rung(trial: Trial, blob: Optional[bytes], data: dict, steps: int, seed: int) -> tuple[int, bytes, float]:
    model, opt = build(trial.cfg)
    if blob is not None:
        ck = torch.load(io.BytesIO(blob), weights_only=True)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
    g = torch.Generator().manual_seed(seed)
    xtr, ytr = data["xtr"], data["ytr"]
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, len(xtr), (trial.cfg.batch,), generator=g)
        loss = nn.functional.mse_loss(model(xtr[idx]).squeeze(1), ytr[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        val = nn.functional.mse_loss(model(data["xva"]).squeeze(1), data["yva"]).item()
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
    return trial.tid, buf.getvalue(), val if math.isfinite(val) else 1e9


class RungScheduler:
    def __init__(self, max_live: int, rng: np.random.Generator) -> None:
        self.max_live = max_live
        self.rng = rng
        self.trials: dict[int, Trial] = {}
        self.paused: dict[int, bytes] = {}
        self._heap: list[list] = []
        self._entry: dict[int, list] = {}
        self._removed = 0
        self._ids = itertools.count()
        self.rung_scores: dict[int, list[float]] = {}
        self.best: tuple[float, int, Optional[bytes]] = (math.inf, -1, None)
        self.killed = 0
        self.finished = 0

    def sample(self) -> Trial:
        r = self.rng
        cfg = TrialConfig(lr=float(10 ** r.uniform(-4, -2)), width=int(r.choice([128, 256, 384])),
                          depth=int(r.integers(2, 4)), weight_decay=float(10 ** r.uniform(-5, -2)),
                          optimizer=str(r.choice(["adamw", "sgd"])), batch=int(r.choice([256, 512])))
        t = Trial(next(self._ids), cfg)
        self.trials[t.tid] = t
        self.push(t.tid, priority=-1e9)   # new trials run first
        return t

    def push(self, tid: int, priority: float) -> None:
        entry = [priority, tid, tid]
        self._entry[tid] = entry
        heapq.heappush(self._heap, entry)

    def cancel(self, tid: int) -> None:
        entry = self._entry.pop(tid, None)
        if entry is not None:
            entry[-1] = REMOVED
            self._removed += 1
            if self._removed > len(self._heap) // 2:
                self._heap = [e for e in self._heap if e[-1] is not REMOVED]
                heapq.heapify(self._heap)
                self._removed = 0

    def pop(self) -> Optional[int]:
        while self._heap:
            _, _, tid = heapq.heappop(self._heap)
            if tid is not REMOVED:
                del self._entry[tid]
                return tid
            self._removed -= 1
        return None

    def report(self, tid: int, blob: bytes, val: float, max_rungs: int) -> str:
        t = self.trials[tid]
        t.rungs += 1
        t.history.append(val)
        level = self.rung_scores.setdefault(t.rungs, [])
        level.append(val)
        if val < self.best[0]:
            self.best = (val, tid, blob)
        if t.rungs >= max_rungs:
            self.finished += 1
            self._drop(tid)
            return "finished"
        if len(level) >= 4 and val > float(np.median(level[-32:])):
            self.killed += 1
            self._drop(tid)
            return "killed"
        self.paused[tid] = blob
        self.push(tid, priority=val / (t.rungs ** 0.5))
        self.cull()
        return "paused"

    def cull(self) -> None:
        """Stop paused trials that have fallen into the bottom quartile of their level."""
        for tid in list(self.paused):
            t = self.trials[tid]
            level = self.rung_scores.get(t.rungs, [])
            if len(level) >= 8 and t.history[-1] > float(np.quantile(level[-32:], 0.75)):
                self.killed += 1
                self._drop(tid)

    def _drop(self, tid: int) -> None:
        self.cancel(tid)
        self.paused.pop(tid, None)
        self.trials.pop(tid, None)

    def fill(self) -> None:
        while len(self.trials) < self.max_live:
            self.sample()


def make_data(seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    w1 = torch.randn(N_FEAT, 32, generator=g) / 8
    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x @ w1).sum(1) + 0.1 * (x[:, 0] * x[:, 1])
    xtr = torch.randn(20000, N_FEAT, generator=g)
    xva = torch.randn(4000, N_FEAT, generator=g)
    return {"xtr": xtr, "ytr": f(xtr) + 0.05 * torch.randn(20000, generator=g),
            "xva": xva, "yva": f(xva)}


def main() -> None:
    ap = argparse.ArgumentParser(description="asynchronous successive-halving sweep")
    ap.add_argument("--rungs", type=int, default=110, help="total rungs to run")
    ap.add_argument("--steps-per-rung", type=int, default=48)
    ap.add_argument("--max-rungs", type=int, default=8)
    ap.add_argument("--max-live", type=int, default=12)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=4)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    data = make_data(args.seed)
    sched = RungScheduler(args.max_live, rng)
    sched.fill()

    pool = cf.ThreadPoolExecutor(max_workers=args.workers, thread_name_prefix="trial")
    running: dict[cf.Future, int] = {}
    done_rungs = 0
    submitted = 0
    outcomes: dict[str, int] = {}
    t0 = last = time.perf_counter()
    while done_rungs < args.rungs:
        while submitted < args.rungs and len(running) < args.workers:
            tid = sched.pop()
            if tid is None:
                break
            blob = sched.paused.pop(tid, None)
            fut = pool.submit(run_rung, sched.trials[tid], blob, data, args.steps_per_rung,
                              args.seed * 100003 + submitted)
            running[fut] = tid
            submitted += 1
        done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
        for fut in done:
            running.pop(fut)
            tid, blob, val = fut.result()
            outcome = sched.report(tid, blob, val, args.max_rungs)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            done_rungs += 1
        sched.fill()
        now = time.perf_counter()
        if now - last > 3.0 or done_rungs >= args.rungs:
            log.info("rungs %d/%d live=%d paused=%d killed=%d finished=%d best=%.4f (trial %d) "
                     "(%.0f ms/rung)", done_rungs, args.rungs, len(sched.trials), len(sched.paused),
                     sched.killed, sched.finished, sched.best[0], sched.best[1],
                     1000 * (now - t0) / done_rungs)
            last = now
    pool.shutdown(wait=True)
    log.info("outcomes: %s; trials sampled: %d", outcomes, next(sched._ids))


if __name__ == "__main__":
    main()
