# expect: no_leak
# holder:
# pattern: batch-cluster scheduling simulation service (pure Python + NumPy + stdlib, no torch, no optimizer; one step = one simulated minute of a heapq discrete-event simulation with priority queue + backfilling over 3.5 simulated days, ~4 ms per step, code in main() + a ClusterSim class); it looks suspicious because every 30 simulated minutes the whole simulator state is pickled into an io.BytesIO, checkpoint blobs are kept for rollback, the event heap and waiting queue swell during the daily peak and submission bursts, what-if branches are restored from old checkpoints with pickle.loads, and a large array.array timeline is held for the whole run; but the BytesIO is rewound and truncated before every dump, only the last 3 blobs live in a deque(maxlen=3), a restored branch replaces the live state (the old one is dropped), finished jobs are folded into fixed-size histograms and removed from the job table, the heap only holds events of jobs currently queued or running (bounded by the cluster size and the burst backlog, which drains), and the timeline array is allocated full-size (zero-filled) at start-up, so RSS reaches its level at the first daily peak (~20% of the run, the clock starts at 06:00) and afterwards wobbles within a fixed band as later peaks and bursts come and go
# step_ms: 4
"""Batch-cluster scheduling simulator.

Simulates a cluster of multi-core machines serving a stream of batch
jobs with a diurnal arrival pattern and occasional submission bursts
(pipelines fanning out).  Jobs wait in a priority queue; the scheduler
places them first-fit and backfills small jobs while a large one waits.
The service checkpoints its state regularly so operators can branch a
what-if run (e.g. a different backfill limit) from a recent point in
time.
"""
from __future__ import annotations

import argparse
import array
import enum
import heapq
import io
import itertools
import logging
import math
import pickle
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger("clustersim")

N_MACHINES = 192
CORES = 32
HORIZON_MIN = 7 * 24 * 60


class Ev(enum.IntEnum):
    ARRIVAL = 0
    FINISH = 1


@dataclass
class Job:
    jid: int
    cores: int
    runtime: float
    priority: int
    submitted: float
    started: float = -1.0
    machine: int = -1
    payload: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.float32))


@dataclass
class SimState:
    now: float = 0.0
    events: list = field(default_factory=list)
    waiting: list = field(default_factory=list)
    jobs: dict = field(default_factory=dict)
    free: np.ndarray = field(default_factory=lambda: np.full(N_MACHINES, CORES, dtype=np.int64))
    seq: int = 0
    next_jid: int = 0
    rng_state: dict = field(default_factory=dict)
    backfill_limit: int = 4


class ClusterSim:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.st = SimState()
        self.wait_hist = array.array("d", bytes(8 * 64))
        self.slowdown_hist = array.array("d", bytes(8 * 64))
        self.timeline = array.array("d", bytes(8 * HORIZON_MIN * 3))   # util, queue, running per minute
        self.completed = 0

    # ---------------------------------------------------------------- events
    def _push(self, t: float, kind: Ev, jid: int) -> None:
        self.st.seq += 1
        heapq.heappush(self.st.events, (t, self.st.seq, int(kind), jid))

    def _arrivals(self, t0: float, t1: float) -> None:
        hour = (t0 / 3600.0) % 24
        rate = 1.2 + 1.0 * math.sin(math.pi * (hour - 7) / 12) ** 2 if 7 <= hour <= 19 else 0.5
        n = self.rng.poisson(rate * (t1 - t0) / 60 * 90)
        if self.rng.random() < 0.03:
            n += int(self.rng.integers(300, 1000))   # pipeline fan-out burst
        for ts in np.sort(self.rng.uniform(t0, t1, n)):
            jid = self.st.next_jid
            self.st.next_jid += 1
            cores = int(min(CORES, max(1, self.rng.lognormal(1.2, 0.9))))
            job = Job(jid, cores, float(self.rng.lognormal(5.5, 1.1)), int(self.rng.integers(0, 3)),
                      float(ts), payload=self.rng.normal(0, 1, 48).astype(np.float32))
            self.st.jobs[jid] = job
            self._push(float(ts), Ev.ARRIVAL, jid)

    def _try_start(self, job: Job) -> bool:
        fits = np.flatnonzero(self.st.free >= job.cores)
        if len(fits) == 0:
            return False
        m = int(fits[np.argmin(self.st.free[fits])])   # best fit
        self.st.free[m] -= job.cores
        job.started, job.machine = self.st.now, m
        self._push(self.st.now + job.runtime, Ev.FINISH, job.jid)
        return True

    def _schedule(self) -> None:
        st = self.st
        blocked = 0
        keep = []
        while st.waiting and blocked <= st.backfill_limit:
            item = heapq.heappop(st.waiting)
            job = st.jobs[item[2]]
            if not self._try_start(job):
                keep.append(item)
                blocked += 1
        for item in keep:
            heapq.heappush(st.waiting, item)

    def _finish(self, jid: int) -> None:
        job = self.st.jobs.pop(jid)
        self.st.free[job.machine] += job.cores
        wait = job.started - job.submitted
        slowdown = (wait + job.runtime) / max(job.runtime, 10.0)
        self.wait_hist[min(63, int(math.log2(1 + wait)))] += 1
        self.slowdown_hist[min(63, int(4 * math.log2(slowdown)))] += 1
        self.completed += 1

    def step_minute(self, minute: int) -> None:
        st = self.st
        t0, t1 = minute * 60.0, (minute + 1) * 60.0
        self._arrivals(t0, t1)
        while st.events and st.events[0][0] < t1:
            t, _, kind, jid = heapq.heappop(st.events)
            st.now = t
            if kind == Ev.ARRIVAL:
                job = st.jobs[jid]
                heapq.heappush(st.waiting, (-job.priority, job.submitted, jid))
            else:
                self._finish(jid)
            self._schedule()
        st.now = t1
        util = 1.0 - st.free.sum() / (N_MACHINES * CORES)
        running = len(st.jobs) - len(st.waiting)
        i = (minute % HORIZON_MIN) * 3
        self.timeline[i], self.timeline[i + 1], self.timeline[i + 2] = util, len(st.waiting), running

    # ----------------------------------------------------------- checkpoints
    def checkpoint(self, buf: io.BytesIO) -> bytes:
        self.st.rng_state = self.rng.bit_generator.state
        buf.seek(0)
        buf.truncate()
        pickle.dump(self.st, buf, protocol=pickle.HIGHEST_PROTOCOL)
        return buf.getvalue()

    def restore(self, blob: bytes, backfill_limit: int) -> None:
        self.st = pickle.loads(blob)
        self.st.backfill_limit = backfill_limit
        self.rng.bit_generator.state = self.st.rng_state


def main() -> None:
    ap = argparse.ArgumentParser(description="batch-cluster scheduling simulator")
    ap.add_argument("--minutes", type=int, default=5040)
    ap.add_argument("--start-hour", type=int, default=6)
    ap.add_argument("--checkpoint-every", type=int, default=30)
    ap.add_argument("--branch-every", type=int, default=12, help="what-if branch every N checkpoints")
    ap.add_argument("--seed", type=int, default=8)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    sim = ClusterSim(args.seed)
    ckpt_buf = io.BytesIO()
    recent: deque[bytes] = deque(maxlen=3)
    n_ckpt = 0
    branches = itertools.cycle([2, 8, 4])
    t0 = last = time.perf_counter()
    first = args.start_hour * 60
    for minute in range(first, first + args.minutes):
        sim.step_minute(minute)
        if (minute + 1) % args.checkpoint_every == 0:
            recent.append(sim.checkpoint(ckpt_buf))
            n_ckpt += 1
            if n_ckpt % args.branch_every == 0 and len(recent) >= 2:
                limit = next(branches)
                sim.restore(recent[-2], limit)
                log.info("what-if branch from t=%.0f min with backfill_limit=%d", sim.st.now / 60, limit)
        now = time.perf_counter()
        if now - last > 3.0 or minute == first + args.minutes - 1:
            st = sim.st
            log.info("sim %02d:%02d day %d util=%.2f waiting=%d running=%d events=%d done=%d "
                     "ckpt=%.1f MB (%.1f ms/step)", (minute // 60) % 24, minute % 60, minute // 1440,
                     1 - st.free.sum() / (N_MACHINES * CORES), len(st.waiting),
                     len(st.jobs) - len(st.waiting), len(st.events), sim.completed,
                     len(recent[-1]) / 1e6 if recent else 0.0, 1000 * (now - t0) / (minute - first + 1))
            last = now
    w = np.frombuffer(sim.wait_hist, dtype=np.float64)
    log.info("median wait bucket: 2^%d s", int(np.searchsorted(np.cumsum(w), w.sum() / 2)))


if __name__ == "__main__":
    main()
